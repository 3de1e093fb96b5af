//! The figures, drawn with `plotters` into SVG and PNG: Figure 1 (round-trip cost per strategy
//! and architecture, with error bars) and Figure 2 (multicore throughput against cores).
//!
//! Text is rendered with the pure-Rust `ab_glyph` font support from a font embedded in the
//! binary (`xtask/fonts/DejaVuSans.ttf`, Bitstream Vera licence), so the PNGs need no system
//! fontconfig or freetype.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::chart::MeshStyle;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::plan::{lock_rank, Platform};
use super::records::Record;

/// The embedded font.
static FONT: &[u8] = include_bytes!("../../fonts/DejaVuSans.ttf");
/// The family name it is registered under.
const FAMILY: &str = "sans-serif";
/// One panel's size in pixels.
const PANEL: (u32, u32) = (620, 440);

/// Registers the embedded font once.
pub(crate) fn register_font() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        plotters::style::register_font(FAMILY, FontStyle::Normal, FONT)
            .map_err(|_| "the embedded font xtask/fonts/DejaVuSans.ttf does not load".to_owned())
    })
    .clone()
}

/// The colour of a lock's bars and lines.
pub(crate) fn colour(lock: &str) -> RGBColor {
    match lock {
        "none" => RGBColor(120, 120, 120),
        "clh" => RGBColor(31, 119, 180),
        "ticket" => RGBColor(23, 190, 207),
        "fine" => RGBColor(255, 127, 14),
        "rtm" => RGBColor(44, 160, 44),
        _ => RGBColor(148, 103, 189),
    }
}

/// One bar of Figure 1.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// The lock.
    pub lock: String,
    /// Mean.
    pub mean: f64,
    /// Standard deviation (error bar half-height).
    pub sd: f64,
}

/// A group of bars: one architecture/board/variant.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The x-axis label.
    pub label: String,
    /// Bars, in lock order.
    pub bars: Vec<Bar>,
}

/// One panel of Figure 1: one platform (its own unit).
#[derive(Clone, Debug, PartialEq)]
pub struct BarPanel {
    /// Title.
    pub title: String,
    /// Y-axis unit.
    pub unit: String,
    /// Groups.
    pub groups: Vec<Group>,
}

/// One line of Figure 2: a lock's throughput against cores.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// The lock.
    pub lock: String,
    /// (cores, mean, sd).
    pub points: Vec<(u32, f64, f64)>,
}

/// One panel of Figure 2: one platform and board.
#[derive(Clone, Debug, PartialEq)]
pub struct LinePanel {
    /// Title.
    pub title: String,
    /// Y-axis unit.
    pub unit: String,
    /// Lines, in lock order.
    pub lines: Vec<Line>,
}

/// The platform's title with its unit's meaning.
fn platform_title(platform: &str) -> &'static str {
    match platform {
        "hosted" => "hosted: kernel on host threads (TSC cycles)",
        "qemu-icount" => "qemu -icount shift=0 (guest instructions)",
        "qemu" => "qemu multi-threaded TCG (wall clock, noisy)",
        _ => "other",
    }
}

/// Figure 1's panels: single-core `ipc-roundtrip` per platform, grouped by arch/board/variant.
pub fn fig1_panels(records: &[Record]) -> Vec<BarPanel> {
    let mut panels = Vec::new();
    for platform in Platform::ALL.map(Platform::name) {
        let rs: Vec<&Record> = records
            .iter()
            .filter(|r| {
                r.platform == platform
                    && r.bench == "ipc-roundtrip"
                    && r.cores == 1
                    && r.clients == 0
            })
            .collect();
        if rs.is_empty() {
            continue;
        }
        // One group per architecture and board, from the preferred variant (cross-address-
        // space, as the paper's ping-pong), so that the labels fit.
        let mut keys: Vec<(String, String)> = rs
            .iter()
            .map(|r| (r.arch.clone(), r.board.clone()))
            .collect();
        // x86_64 first, as in the paper's figure.
        keys.sort_by(|a, b| (a.0 != "x86_64", a).cmp(&(b.0 != "x86_64", b)));
        keys.dedup();
        let mut variants: Vec<String> = Vec::new();
        let groups = keys
            .into_iter()
            .map(|(arch, board)| {
                let variant = rs
                    .iter()
                    .filter(|r| r.arch == arch && r.board == board)
                    .map(|r| r.variant.as_str())
                    .min_by_key(|v| match *v {
                        "cross-as" => 0,
                        "" => 1,
                        _ => 2,
                    })
                    .unwrap_or("")
                    .to_owned();
                let mut bars: Vec<Bar> = rs
                    .iter()
                    .filter(|r| r.arch == arch && r.board == board && r.variant == variant)
                    .map(|r| Bar {
                        lock: r.lock.clone(),
                        mean: r.mean,
                        sd: r.stddev,
                    })
                    .collect();
                bars.sort_by_key(|b| lock_rank(&b.lock));
                if !variants.contains(&variant) {
                    variants.push(variant);
                }
                let label = match board.as_str() {
                    "host" | "microvm" => arch,
                    _ => format!("{arch} {board}"),
                };
                Group { label, bars }
            })
            .collect();
        let variants: Vec<&str> = variants
            .iter()
            .map(String::as_str)
            .filter(|v| !v.is_empty())
            .collect();
        let title = if variants.is_empty() {
            platform_title(platform).to_owned()
        } else {
            format!("{}, {}", platform_title(platform), variants.join("/"))
        };
        panels.push(BarPanel {
            title,
            unit: rs[0].unit.clone(),
            groups,
        });
    }
    panels
}

/// Figure 2's panels: `multicore-pingpong` per platform and board, one line per lock.
pub fn fig2_panels(records: &[Record]) -> Vec<LinePanel> {
    let mut panels = Vec::new();
    for platform in Platform::ALL.map(Platform::name) {
        let rs: Vec<&Record> = records
            .iter()
            .filter(|r| r.platform == platform && r.bench == "multicore-pingpong")
            .collect();
        let mut boards: Vec<(String, String)> = rs
            .iter()
            .map(|r| (r.arch.clone(), r.board.clone()))
            .collect();
        boards.sort_by(|a, b| (a.0 != "x86_64", a).cmp(&(b.0 != "x86_64", b)));
        boards.dedup();
        for (arch, board) in boards {
            let mut locks: Vec<&str> = rs
                .iter()
                .filter(|r| r.board == board)
                .map(|r| r.lock.as_str())
                .collect();
            locks.sort_by_key(|l| lock_rank(l));
            locks.dedup();
            let lines = locks
                .into_iter()
                .map(|lock| {
                    let mut points: Vec<(u32, f64, f64)> = rs
                        .iter()
                        .filter(|r| r.board == board && r.lock == lock)
                        .map(|r| (r.cores, r.mean, r.stddev))
                        .collect();
                    points.sort_by_key(|p| p.0);
                    points.dedup_by_key(|p| p.0);
                    Line {
                        lock: lock.to_owned(),
                        points,
                    }
                })
                .collect();
            let short = match platform {
                "hosted" => "hosted (host threads)",
                "qemu" => "qemu MTTCG (noisy)",
                other => other,
            };
            panels.push(LinePanel {
                title: format!("{short}: {arch} {board}"),
                unit: rs[0].unit.clone(),
                lines,
            });
        }
    }
    panels
}

/// Rows and columns for `n` panels.
fn grid(n: usize) -> (usize, usize) {
    let cols = match n {
        0 | 1 => 1,
        2 | 4 => 2,
        _ => 3,
    };
    (n.max(1).div_ceil(cols), cols)
}

/// Converts a plotters error.
fn err<E: std::fmt::Display>(e: E) -> String {
    format!("plotting failed: {e}")
}

/// Writes `text` in `size`-point type in the middle of `area`.
fn draw_centred<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    size: u32,
) -> Result<(), String> {
    let (w, h) = area.dim_in_pixel();
    let style =
        TextStyle::from((FAMILY, size).into_font()).pos(Pos::new(HPos::Center, VPos::Center));
    area.draw(&Text::new(
        text.to_owned(),
        (w as i32 / 2, h as i32 / 2),
        style,
    ))
    .map_err(err)
}

/// The chart of one panel: `f64` on both axes.
type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Fills `root` white, writes the figure's `title` across its top and returns one area per
/// panel below it; with no panels, writes `empty` there instead and returns no areas.
fn draw_frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    panels: usize,
    empty: &str,
) -> Result<Vec<DrawingArea<DB, Shift>>, String> {
    root.fill(&WHITE).map_err(err)?;
    let (title_area, body) = root.split_vertically(36);
    draw_centred(&title_area, title, 20)?;
    if panels == 0 {
        draw_centred(&body, empty, 16)?;
        return Ok(Vec::new());
    }
    Ok(body.split_evenly(grid(panels)))
}

/// A panel's chart on `area`: its `caption`, label areas of `label_areas` (x, y) pixels and the
/// axes' ranges.
fn panel_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
    label_areas: (u32, u32),
    x: Range<f64>,
    y: Range<f64>,
) -> Result<Chart<'a, DB>, String> {
    ChartBuilder::on(area)
        .caption(caption, (FAMILY, 16))
        .margin(12)
        .x_label_area_size(label_areas.0)
        .y_label_area_size(label_areas.1)
        .build_cartesian_2d(x, y)
        .map_err(err)
}

/// The mesh of a panel's chart with what both figures share: the y labels, `unit` along the y
/// axis and the fonts. The caller sets the x axis and draws it.
fn mesh<'a, 'b, DB: DrawingBackend>(
    chart: &'b mut Chart<'a, DB>,
    unit: &str,
) -> MeshStyle<'a, 'b, RangedCoordf64, RangedCoordf64, DB> {
    let mut mesh = chart.configure_mesh();
    mesh.y_label_formatter(&|y| super::report::fmt_num(*y))
        .y_desc(unit)
        .label_style((FAMILY, 13))
        .axis_desc_style((FAMILY, 14));
    mesh
}

/// Draws the legend of a panel's chart at `position`.
fn draw_legend<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FAMILY, 13))
        .draw()
        .map_err(err)
}

/// Draws Figure 1 on `root`.
fn draw_fig1<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    panels: &[BarPanel],
) -> Result<(), String> {
    let areas = draw_frame(
        root,
        "Figure 1: IPC round trip (Call + ReplyRecv) per locking strategy, mean ± std dev",
        panels.len(),
        "no single-core ipc-roundtrip records were measured",
    )?;
    for (panel, area) in panels.iter().zip(areas) {
        let n = panel.groups.len().max(1);
        let top = panel
            .groups
            .iter()
            .flat_map(|g| g.bars.iter().map(|b| b.mean + b.sd))
            .fold(0.0f64, f64::max);
        // Headroom for the value labels and the legend above the tallest bar.
        let ymax = if top > 0.0 { top * 1.5 } else { 1.0 };
        let mut chart = panel_chart(&area, &panel.title, (36, 70), 0f64..n as f64, 0f64..ymax)?;
        mesh(&mut chart, &panel.unit)
            .disable_x_mesh()
            .x_labels(2)
            .x_label_formatter(&|_| String::new())
            .draw()
            .map_err(err)?;
        let mut locks: Vec<&str> = panel
            .groups
            .iter()
            .flat_map(|g| g.bars.iter().map(|b| b.lock.as_str()))
            .collect();
        locks.sort_by_key(|l| lock_rank(l));
        locks.dedup();
        let slots = locks.len().max(1) as f64;
        let width = 0.8 / slots;
        for lock in &locks {
            let c = colour(lock);
            let slot = locks.iter().position(|l| l == lock).unwrap_or(0) as f64;
            let bars: Vec<(f64, &Bar)> = panel
                .groups
                .iter()
                .enumerate()
                .filter_map(|(i, g)| {
                    g.bars
                        .iter()
                        .find(|b| b.lock == *lock)
                        .map(|b| (i as f64 + 0.1 + slot * width, b))
                })
                .collect();
            chart
                .draw_series(bars.iter().map(|(x, b)| {
                    Rectangle::new([(*x, 0.0), (*x + width * 0.9, b.mean)], c.filled())
                }))
                .map_err(err)?
                .label(*lock)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
            chart
                .draw_series(bars.iter().map(|(x, b)| {
                    ErrorBar::new_vertical(
                        *x + width * 0.45,
                        (b.mean - b.sd).max(0.0),
                        b.mean,
                        b.mean + b.sd,
                        BLACK.stroke_width(1),
                        8,
                    )
                }))
                .map_err(err)?;
            let value_style =
                TextStyle::from((FAMILY, 11).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
            chart
                .draw_series(bars.iter().map(|(x, b)| {
                    Text::new(
                        super::report::fmt_num(b.mean),
                        (*x + width * 0.45, b.mean + b.sd + ymax * 0.01),
                        value_style.clone(),
                    )
                }))
                .map_err(err)?;
        }
        // Group labels under the axis, in pixels of this panel's area.
        let (bx, by) = area.get_base_pixel();
        let label_style =
            TextStyle::from((FAMILY, 13).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        for (i, g) in panel.groups.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
            area.draw(&Text::new(
                g.label.clone(),
                (px - bx, py - by + 8),
                label_style.clone(),
            ))
            .map_err(err)?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    }
    Ok(())
}

/// Draws Figure 2 on `root`.
fn draw_fig2<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    panels: &[LinePanel],
) -> Result<(), String> {
    let areas = draw_frame(
        root,
        "Figure 2: multicore ping-pong throughput (one pair per core), mean ± std dev",
        panels.len(),
        "no multicore-pingpong records were measured",
    )?;
    for (panel, area) in panels.iter().zip(areas) {
        let max_cores = panel
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.0))
            .max()
            .unwrap_or(1)
            .max(2);
        let none_one = panel
            .lines
            .iter()
            .find(|l| l.lock == "none")
            .and_then(|l| l.points.iter().find(|p| p.0 == 1))
            .map(|p| p.1);
        let top = panel
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1 + p.2))
            .chain(none_one.map(|v| v * f64::from(max_cores)))
            .fold(0.0f64, f64::max);
        let ymax = if top > 0.0 { top * 1.15 } else { 1.0 };
        let mut chart = panel_chart(
            &area,
            &panel.title,
            (40, 80),
            0.5f64..f64::from(max_cores) + 0.5,
            0f64..ymax,
        )?;
        mesh(&mut chart, &panel.unit)
            .x_labels(max_cores as usize + 1)
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 1e-9 && *x >= 1.0 {
                    format!("{x:.0}")
                } else {
                    String::new()
                }
            })
            .x_desc("cores")
            .draw()
            .map_err(err)?;
        if let Some(base) = none_one {
            let grey = RGBColor(170, 170, 170);
            chart
                .draw_series(DashedLineSeries::new(
                    (1..=max_cores).map(|c| (f64::from(c), base * f64::from(c))),
                    6,
                    4,
                    grey.stroke_width(1),
                ))
                .map_err(err)?
                .label("ideal (none at 1 core x cores)")
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], grey));
        }
        for line in &panel.lines {
            let c = colour(&line.lock);
            let pts: Vec<(f64, f64)> = line.points.iter().map(|p| (f64::from(p.0), p.1)).collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                .map_err(err)?
                .label(line.lock.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 14, y)], c.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|p| Circle::new(*p, 4, c.filled())))
                .map_err(err)?;
            chart
                .draw_series(line.points.iter().map(|p| {
                    ErrorBar::new_vertical(
                        f64::from(p.0),
                        (p.1 - p.2).max(0.0),
                        p.1,
                        p.1 + p.2,
                        c.stroke_width(1),
                        8,
                    )
                }))
                .map_err(err)?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    }
    Ok(())
}

/// Which figure.
#[derive(Clone, Copy, Debug)]
enum Figure {
    RoundTrip,
    Throughput,
}

/// Draws `figure` onto one backend.
fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    figure: Figure,
    records: &[Record],
) -> Result<(), String> {
    match figure {
        Figure::RoundTrip => draw_fig1(&root, &fig1_panels(records))?,
        Figure::Throughput => draw_fig2(&root, &fig2_panels(records))?,
    }
    root.present().map_err(err)
}

/// Writes `fig1-roundtrip.{svg,png}` and `fig2-throughput.{svg,png}` into `dir`; returns the
/// paths written.
pub fn write_all(dir: &Path, records: &[Record]) -> Result<Vec<PathBuf>, String> {
    register_font()?;
    let mut written = Vec::new();
    for (figure, stem, n) in [
        (
            Figure::RoundTrip,
            "fig1-roundtrip",
            fig1_panels(records).len(),
        ),
        (
            Figure::Throughput,
            "fig2-throughput",
            fig2_panels(records).len(),
        ),
    ] {
        let (rows, cols) = grid(n);
        // Wide enough for the figure's title.
        let size = (
            (PANEL.0 * cols as u32).max(1000),
            PANEL.1 * rows as u32 + 36,
        );
        let svg = dir.join(format!("{stem}.svg"));
        draw(
            SVGBackend::new(&svg, size).into_drawing_area(),
            figure,
            records,
        )?;
        written.push(svg);
        let png = dir.join(format!("{stem}.png"));
        draw(
            BitMapBackend::new(&png, size).into_drawing_area(),
            figure,
            records,
        )?;
        written.push(png);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::record;
    use super::*;

    fn records() -> Vec<Record> {
        let mut v = Vec::new();
        for (lock, m) in [("none", 280.0), ("clh", 330.0), ("fine", 420.0)] {
            v.push(record(
                "ipc-roundtrip",
                "x86_64",
                "qemu-icount",
                lock,
                1,
                &[m, m],
            ));
            v.push(record(
                "ipc-roundtrip",
                "armv7",
                "qemu-icount",
                lock,
                1,
                &[m * 1.5, m * 1.5],
            ));
            v.push(record(
                "ipc-roundtrip",
                "x86_64",
                "hosted",
                lock,
                1,
                &[m + 100.0, m + 140.0],
            ));
            for cores in [1, 2, 4] {
                let t = 1e6 * f64::from(cores) * if lock == "clh" { 0.6 } else { 0.97 };
                v.push(record(
                    "multicore-pingpong",
                    "x86_64",
                    "hosted",
                    lock,
                    cores,
                    &[t, t * 1.02],
                ));
            }
        }
        v
    }

    #[test]
    fn panels_group_the_records() {
        let p1 = fig1_panels(&records());
        assert_eq!(p1.len(), 2);
        assert_eq!(p1[0].unit, "cycles");
        assert_eq!(p1[1].groups.len(), 2);
        assert_eq!(
            p1[1].groups[0]
                .bars
                .iter()
                .map(|b| b.lock.as_str())
                .collect::<Vec<_>>(),
            ["none", "clh", "fine"]
        );
        let p2 = fig2_panels(&records());
        assert_eq!(p2.len(), 1);
        assert_eq!(p2[0].lines.len(), 3);
        assert_eq!(p2[0].lines[1].points.len(), 3);
    }

    #[test]
    fn figures_are_written_as_svg_and_png() {
        let dir = std::env::temp_dir().join(format!("xtask-plot-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for recs in [records(), Vec::new()] {
            let files = write_all(&dir, &recs).unwrap();
            assert_eq!(files.len(), 4);
            for f in &files {
                let bytes = std::fs::read(f).unwrap();
                if f.extension().unwrap() == "png" {
                    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}", f.display());
                } else {
                    let text = String::from_utf8(bytes).unwrap();
                    assert!(text.starts_with("<svg"), "{}", f.display());
                    assert!(text.contains("Figure"), "{}", f.display());
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
