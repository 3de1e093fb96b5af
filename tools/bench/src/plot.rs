//! The figures, drawn with `plotters` into SVG and PNG:
//!
//! * Figure 1: the round-trip cost per strategy and architecture (mean ± std dev, each bar
//!   labelled with its value and its overhead over `none`), and below it the overheads beside
//!   the seed paper's ([`super::paper`]).
//! * Figure 2: multicore ping-pong throughput against cores.
//! * Figure 3: client-server throughput against clients, per variant.
//!
//! In Figures 2 and 3 a point measured with more cores than the host has is drawn hollow
//! (oversubscribed, in a shaded band), a point measured under QEMU's TCG is a triangle
//! (emulated), and the legend beside each panel says so. The y range is set by the data
//! (error bars included, never below zero); Figure 2's ideal line is cut where it leaves it.
//!
//! Every figure, the memory suite's and the trace tools' charts too, is written as SVG and PNG
//! by [`svg_and_png`], from one [`Drawing`] that draws the same on either backend.
//!
//! Text is rendered with the pure-Rust `ab_glyph` font support from a font embedded in the
//! binary (`tools/bench/fonts/DejaVuSans.ttf`, Bitstream Vera licence), so the PNGs need no system
//! fontconfig or freetype.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::chart::MeshStyle;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::paper;
use super::plan::{lock_rank, Platform, LOCK_ORDER};
use super::records::Record;
use super::report::{fmt_num, overhead};

/// The embedded font.
static FONT: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");
/// The family name it is registered under.
const FAMILY: &str = "sans-serif";
/// One panel's size in pixels (Figures 2 and 3, legend included).
const PANEL: (u32, u32) = (800, 440);
/// The width of the legend beside a panel of Figures 2 and 3, and beside Figure 1's overheads.
const LEGEND_WIDTH: u32 = 250;
/// The height of the figure's title.
const TITLE: u32 = 36;
/// The height of Figure 1's overhead panel.
const OVERHEAD_HEIGHT: u32 = 400;

/// Registers the embedded font once.
pub fn register_font() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).map_err(|_| {
            "the embedded font tools/bench/fonts/DejaVuSans.ttf does not load".to_owned()
        })
    })
    .clone()
}

/// The colour of a lock's bars and lines.
pub fn colour(lock: &str) -> RGBColor {
    match lock {
        "none" => RGBColor(120, 120, 120),
        "clh" => RGBColor(31, 119, 180),
        "ticket" => RGBColor(23, 190, 207),
        "fine" => RGBColor(255, 127, 14),
        "rtm" => RGBColor(44, 160, 44),
        "mcs" => RGBColor(148, 103, 189),
        "qspin" => RGBColor(140, 86, 75),
        "cna" => RGBColor(227, 119, 194),
        // The memory suite's series (super::memory): per-core pagers blue, the global pager
        // red; allocation dark, free light.
        "percore alloc" => RGBColor(31, 119, 180),
        "percore free" => RGBColor(120, 175, 220),
        "global alloc" => RGBColor(214, 39, 40),
        "global free" => RGBColor(245, 140, 130),
        // The redis suite's baseline (super::redis): Linux + Redis, black.
        "linux" => RGBColor(0, 0, 0),
        _ => RGBColor(188, 189, 34),
    }
}

/// The colour of the `i`th place (platform and board) in Figure 1's overhead panel.
fn place_colour(i: usize) -> RGBColor {
    const PLACES: [RGBColor; 5] = [
        RGBColor(68, 119, 170),
        RGBColor(34, 136, 51),
        RGBColor(204, 187, 68),
        RGBColor(238, 102, 119),
        RGBColor(170, 51, 119),
    ];
    PLACES[i % PLACES.len()]
}

/// The grey of the ideal line and the oversubscribed band's text.
const GREY: RGBColor = RGBColor(150, 150, 150);

/// One bar of Figure 1.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// The lock.
    pub lock: String,
    /// Mean.
    pub mean: f64,
    /// Standard deviation (error bar half-height).
    pub sd: f64,
    /// Overhead over the group's `none` bar, as a fraction (none for `none` itself, or when
    /// the group has no positive `none`).
    pub overhead: Option<f64>,
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

/// A series of Figure 1's overhead panel: one of our places, or the paper on one architecture.
#[derive(Clone, Debug, PartialEq)]
pub struct OverheadSeries {
    /// The legend's text.
    pub name: String,
    /// Whether it is the paper's (drawn hollow).
    pub paper: bool,
}

/// One bar of the overhead panel.
#[derive(Clone, Debug, PartialEq)]
pub struct OverheadBar {
    /// Index into [`OverheadPanel::series`].
    pub series: usize,
    /// Overhead in percent.
    pub percent: f64,
    /// The label over the bar (`+6%`, `~+30%`).
    pub label: String,
}

/// The bars of one lock in the overhead panel.
#[derive(Clone, Debug, PartialEq)]
pub struct OverheadGroup {
    /// The lock.
    pub lock: String,
    /// Ours, then the paper's.
    pub bars: Vec<OverheadBar>,
}

/// Figure 1's lower panel: each lock's round-trip overhead over `none`, ours on every place
/// measured beside the paper's.
#[derive(Clone, Debug, PartialEq)]
pub struct OverheadPanel {
    /// The series, ours first.
    pub series: Vec<OverheadSeries>,
    /// One group per lock measured (other than `none`).
    pub groups: Vec<OverheadGroup>,
}

/// One point of Figures 2 and 3.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// The x value (cores, or clients).
    pub x: u32,
    /// The cores the point ran on.
    pub cores: u32,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub sd: f64,
    /// More cores than the host has: the point is oversubscribed.
    pub oversubscribed: bool,
}

/// One line of Figures 2 and 3: a lock's throughput.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// The lock.
    pub lock: String,
    /// Points, by x.
    pub points: Vec<Point>,
}

/// One panel of Figures 2 and 3: one platform and board (and variant).
#[derive(Clone, Debug, PartialEq)]
pub struct LinePanel {
    /// Title.
    pub title: String,
    /// Y-axis unit.
    pub unit: String,
    /// X-axis description (`cores`, `clients`).
    pub x_desc: &'static str,
    /// Lines, in lock order.
    pub lines: Vec<Line>,
    /// Measured under QEMU's TCG: every point is emulated.
    pub emulated: bool,
    /// The host's cores (of the records' machine).
    pub host_cores: usize,
    /// Whether the ideal line (`none` at 1 core times the cores) is drawn.
    pub ideal: bool,
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

/// The platform's short name in panel titles of Figures 2 and 3.
fn platform_short(platform: &str) -> &str {
    match platform {
        "hosted" => "hosted (host threads)",
        "qemu" => "qemu MTTCG (emulated, noisy)",
        other => other,
    }
}

/// The (arch, board) pairs of `records`, x86_64 first (as in the paper's figure), each once.
fn boards_of(records: &[&Record]) -> Vec<(String, String)> {
    let mut keys: Vec<(String, String)> = records
        .iter()
        .map(|r| (r.arch.clone(), r.board.clone()))
        .collect();
    keys.sort_by(|a, b| (a.0 != "x86_64", a).cmp(&(b.0 != "x86_64", b)));
    keys.dedup();
    keys
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
        let mut variants: Vec<String> = Vec::new();
        let groups = boards_of(&rs)
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
                let chosen: Vec<&&Record> = rs
                    .iter()
                    .filter(|r| r.arch == arch && r.board == board && r.variant == variant)
                    .collect();
                let base = chosen
                    .iter()
                    .find(|r| r.lock == "none")
                    .map(|r| r.mean)
                    .filter(|m| *m > 0.0);
                let mut bars: Vec<Bar> = chosen
                    .iter()
                    .map(|r| Bar {
                        lock: r.lock.clone(),
                        mean: r.mean,
                        sd: r.stddev,
                        overhead: base.filter(|_| r.lock != "none").map(|b| (r.mean - b) / b),
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

/// `+6%` of a fraction.
fn percent_label(fraction: f64) -> String {
    format!("{:+.0}%", (fraction * 100.0).round() + 0.0)
}

/// Figure 1's overhead panel: for every lock measured besides `none`, our round-trip overhead
/// on every platform and board with single-core round trips (as the report computes it), and
/// the paper's for the same lock. `None` when no overhead could be computed.
pub fn fig1_overheads(records: &[Record]) -> Option<OverheadPanel> {
    let rts: Vec<&Record> = records
        .iter()
        .filter(|r| r.bench == "ipc-roundtrip" && r.cores == 1 && r.clients == 0)
        .collect();
    let mut places: Vec<(usize, String, String, String)> = rts
        .iter()
        .map(|r| {
            let rank = Platform::ALL
                .iter()
                .position(|p| p.name() == r.platform)
                .unwrap_or(Platform::ALL.len());
            (rank, r.arch.clone(), r.platform.clone(), r.board.clone())
        })
        .collect();
    places.sort_by(|a, b| (a.0, a.1 != "x86_64", &a.3).cmp(&(b.0, b.1 != "x86_64", &b.3)));
    places.dedup();
    let mut series: Vec<OverheadSeries> = places
        .iter()
        .map(|(_, _, platform, board)| OverheadSeries {
            name: format!("ours: {platform} {board}"),
            paper: false,
        })
        .collect();
    let mut paper_series: Vec<(&str, usize)> = Vec::new();
    let mut groups = Vec::new();
    for lock in LOCK_ORDER.iter().filter(|l| **l != "none") {
        let mut bars: Vec<OverheadBar> = places
            .iter()
            .enumerate()
            .filter_map(|(i, (_, _, platform, board))| {
                let (_, frac, _) = overhead(records, platform, board, lock).ok()?;
                Some(OverheadBar {
                    series: i,
                    percent: frac * 100.0,
                    label: percent_label(frac),
                })
            })
            .collect();
        if bars.is_empty() {
            continue;
        }
        for p in paper::OVERHEADS.iter().filter(|p| p.lock == *lock) {
            let index = match paper_series.iter().find(|(arch, _)| *arch == p.arch) {
                Some((_, i)) => *i,
                None => {
                    series.push(OverheadSeries {
                        name: format!("paper: {} ({})", p.arch, paper::machine(p.arch)),
                        paper: true,
                    });
                    paper_series.push((p.arch, series.len() - 1));
                    series.len() - 1
                }
            };
            bars.push(OverheadBar {
                series: index,
                percent: p.percent,
                label: p.label(),
            });
        }
        groups.push(OverheadGroup {
            lock: (*lock).to_owned(),
            bars,
        });
    }
    (!groups.is_empty()).then_some(OverheadPanel { series, groups })
}

/// The line panels of `records` of `bench`: per platform and board (and, with `by_variant`,
/// per variant), one line per lock, `x` of each point from its record.
fn line_panels(
    records: &[Record],
    bench: &str,
    by_variant: bool,
    x_of: fn(&Record) -> u32,
    x_desc: &'static str,
    ideal: bool,
) -> Vec<LinePanel> {
    let mut panels = Vec::new();
    for platform in Platform::ALL.map(Platform::name) {
        let rs: Vec<&Record> = records
            .iter()
            .filter(|r| r.platform == platform && r.bench == bench && r.runs > 0)
            .collect();
        for (arch, board) in boards_of(&rs) {
            let on_board: Vec<&Record> = rs
                .iter()
                .copied()
                .filter(|r| r.arch == arch && r.board == board)
                .collect();
            let mut variants: Vec<&str> = if by_variant {
                on_board.iter().map(|r| r.variant.as_str()).collect()
            } else {
                vec![""]
            };
            // `shared` before `dedicated`.
            variants.sort_by_key(|v| (*v != "shared", *v));
            variants.dedup();
            for variant in variants {
                let of_variant: Vec<&Record> = on_board
                    .iter()
                    .copied()
                    .filter(|r| !by_variant || r.variant == variant)
                    .collect();
                let host_cores = of_variant[0].machine.host_cores;
                let mut locks: Vec<&str> = of_variant.iter().map(|r| r.lock.as_str()).collect();
                locks.sort_by_key(|l| lock_rank(l));
                locks.dedup();
                let lines = locks
                    .into_iter()
                    .map(|lock| {
                        let mut points: Vec<Point> = of_variant
                            .iter()
                            .filter(|r| r.lock == lock)
                            .map(|r| Point {
                                x: x_of(r),
                                cores: r.cores,
                                mean: r.mean,
                                sd: r.stddev,
                                oversubscribed: r.cores as usize > host_cores,
                            })
                            .collect();
                        points.sort_by_key(|p| p.x);
                        points.dedup_by_key(|p| p.x);
                        Line {
                            lock: lock.to_owned(),
                            points,
                        }
                    })
                    .collect();
                let title = if variant.is_empty() {
                    format!("{}: {arch} {board}", platform_short(platform))
                } else {
                    format!("{}: {arch} {board}, {variant}", platform_short(platform))
                };
                panels.push(LinePanel {
                    title,
                    unit: of_variant[0].unit.clone(),
                    x_desc,
                    lines,
                    emulated: platform != "hosted",
                    host_cores,
                    ideal,
                });
            }
        }
    }
    panels
}

/// Figure 2's panels: `multicore-pingpong` per platform and board, one line per lock.
pub fn fig2_panels(records: &[Record]) -> Vec<LinePanel> {
    line_panels(
        records,
        "multicore-pingpong",
        false,
        |r| r.cores,
        "cores",
        true,
    )
}

/// Figure 3's panels: `client-server` per platform, board and variant, one line per lock,
/// against the number of clients.
pub fn fig3_panels(records: &[Record]) -> Vec<LinePanel> {
    line_panels(
        records,
        "client-server",
        true,
        |r| r.clients,
        "clients",
        false,
    )
}

/// An error bar's ends: mean ± sd, never below zero.
pub fn error_bar(mean: f64, sd: f64) -> (f64, f64) {
    ((mean - sd).max(0.0), mean + sd)
}

/// The top of a line panel's y axis: the highest error bar, with a little headroom. The ideal
/// line does not count: it is cut at this top ([`clip_ideal`]).
pub fn line_ymax(panel: &LinePanel) -> f64 {
    let top = panel
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| error_bar(p.mean, p.sd).1))
        .fold(0.0f64, f64::max);
    if top > 0.0 {
        top * 1.08
    } else {
        1.0
    }
}

/// The ideal line from `base` at 1 core to `max_cores`, cut where it crosses `ymax`.
pub fn clip_ideal(base: f64, max_cores: u32, ymax: f64) -> Vec<(f64, f64)> {
    let mut points = Vec::new();
    for c in 1..=max_cores {
        let y = base * f64::from(c);
        if y <= ymax {
            points.push((f64::from(c), y));
        } else {
            if base > 0.0 && !points.is_empty() {
                points.push((ymax / base, ymax));
            }
            break;
        }
    }
    points
}

/// Where a panel's oversubscribed band starts on the x axis, if any point is oversubscribed:
/// half-way between the last x that fits the host and the next (cores and x differ by a fixed
/// number in a panel: clients and a server core, or cores themselves).
pub fn oversubscribed_from(panel: &LinePanel) -> Option<f64> {
    let points: Vec<&Point> = panel.lines.iter().flat_map(|l| &l.points).collect();
    let first = points.iter().find(|p| p.oversubscribed)?;
    let offset = i64::from(first.cores) - i64::from(first.x);
    let fits = panel.host_cores as i64 - offset;
    Some((fits as f64 + 0.5).max(0.5))
}

/// Rows and columns for `n` panels (at most `max_cols` columns).
fn grid(n: usize, max_cols: usize) -> (usize, usize) {
    let cols = match n {
        0 | 1 => 1,
        2 | 4 => 2,
        _ => 3,
    }
    .min(max_cols.max(1));
    (n.max(1).div_ceil(cols), cols)
}

/// The most columns of a line figure: Figure 3 pairs each board's shared and dedicated panels
/// in a row.
fn max_cols(figure: Figure) -> usize {
    match figure {
        Figure::ClientServer => 2,
        _ => 3,
    }
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

/// Fills `root` white, writes the figure's `title` across its top and returns the area below;
/// with `empty` set, writes it there instead and returns `None`.
fn draw_frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    empty: Option<&str>,
) -> Result<Option<DrawingArea<DB, Shift>>, String> {
    root.fill(&WHITE).map_err(err)?;
    let (title_area, body) = root.split_vertically(TITLE);
    draw_centred(&title_area, title, 20)?;
    if let Some(empty) = empty {
        draw_centred(&body, empty, 16)?;
        return Ok(None);
    }
    Ok(Some(body))
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

/// The mesh of a panel's chart with what every figure shares: the y labels, `unit` along the y
/// axis and the fonts. The caller sets the x axis and draws it.
fn mesh<'a, 'b, DB: DrawingBackend>(
    chart: &'b mut Chart<'a, DB>,
    unit: &str,
) -> MeshStyle<'a, 'b, RangedCoordf64, RangedCoordf64, DB> {
    let mut mesh = chart.configure_mesh();
    mesh.y_label_formatter(&|y| fmt_num(*y))
        .y_desc(unit)
        .label_style((FAMILY, 13))
        .axis_desc_style((FAMILY, 14));
    mesh
}

/// Draws the legend of a panel's chart at `position` (from the series' labels).
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

/// What a legend entry beside a panel shows before its text.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Glyph {
    /// A filled box (a bar).
    Box(RGBColor),
    /// A box of this fill with a black border (the paper's bars).
    OutlinedBox(RGBColor),
    /// A line.
    Line(RGBColor),
    /// A dashed line.
    Dashed(RGBColor),
    /// An error bar.
    ErrorBar(RGBColor),
    /// A circle marker, filled or hollow.
    Circle(bool),
    /// A triangle marker, filled or hollow.
    Triangle(bool),
}

/// One entry of a legend beside a panel.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The glyph.
    pub glyph: Glyph,
    /// The text (wrapped to the legend's width).
    pub text: String,
}

/// Splits `text` into lines at its line breaks, and lines longer than `width` characters at
/// spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for paragraph in text.split('\n') {
        let mut current: Option<String> = None;
        for word in paragraph.split(' ') {
            current = Some(match current {
                Some(mut line) if line.chars().count() + 1 + word.chars().count() <= width => {
                    line.push(' ');
                    line.push_str(word);
                    line
                }
                Some(line) => {
                    lines.push(line);
                    word.to_owned()
                }
                None => word.to_owned(),
            });
        }
        lines.extend(current);
    }
    lines
}

/// A marker's two layers (size in pixels, style; size 0: none): a coloured circle or triangle,
/// and for a hollow one a smaller white one inside.
fn marker_parts(triangle: bool, filled: bool, c: RGBColor) -> [(i32, ShapeStyle); 2] {
    let outer = if triangle { 7 } else { 5 };
    let inner = if filled { 0 } else { 3 };
    [(outer, c.filled()), (inner, WHITE.filled())]
}

/// Draws a legend beside a panel: the entries top-down from `top` pixels, in `area`.
fn draw_side_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[Entry],
    top: i32,
) -> Result<(), String> {
    let text_style =
        TextStyle::from((FAMILY, 13).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let (x, mut y) = (6, top);
    let chars = ((LEGEND_WIDTH as i32 - 32) / 8).max(10) as usize;
    for entry in entries {
        let lines = wrap(&entry.text, chars);
        let (gx, gy) = (x + 10, y + 8);
        match entry.glyph {
            Glyph::Box(c) => area
                .draw(&Rectangle::new(
                    [(gx - 7, gy - 6), (gx + 7, gy + 6)],
                    c.filled(),
                ))
                .map_err(err)?,
            Glyph::OutlinedBox(fill) => {
                area.draw(&Rectangle::new(
                    [(gx - 7, gy - 6), (gx + 7, gy + 6)],
                    fill.filled(),
                ))
                .map_err(err)?;
                area.draw(&Rectangle::new(
                    [(gx - 7, gy - 6), (gx + 7, gy + 6)],
                    BLACK.stroke_width(2),
                ))
                .map_err(err)?
            }
            Glyph::ErrorBar(c) => {
                for path in [
                    vec![(gx, gy - 7), (gx, gy + 7)],
                    vec![(gx - 4, gy - 7), (gx + 4, gy - 7)],
                    vec![(gx - 4, gy + 7), (gx + 4, gy + 7)],
                ] {
                    area.draw(&PathElement::new(path, c.stroke_width(1)))
                        .map_err(err)?;
                }
            }
            Glyph::Line(c) => area
                .draw(&PathElement::new(
                    vec![(gx - 9, gy), (gx + 9, gy)],
                    c.stroke_width(2),
                ))
                .map_err(err)?,
            Glyph::Dashed(c) => {
                for dx in [-9, -2, 5] {
                    area.draw(&PathElement::new(
                        vec![(gx + dx, gy), (gx + dx + 4, gy)],
                        c.stroke_width(1),
                    ))
                    .map_err(err)?;
                }
            }
            Glyph::Circle(filled) | Glyph::Triangle(filled) => {
                let triangle = matches!(entry.glyph, Glyph::Triangle(_));
                for (size, style) in marker_parts(triangle, filled, BLACK) {
                    if size == 0 {
                        continue;
                    }
                    if triangle {
                        area.draw(&TriangleMarker::new((gx, gy), size, style))
                            .map_err(err)?;
                    } else {
                        area.draw(&Circle::new((gx, gy), size, style))
                            .map_err(err)?;
                    }
                }
            }
        }
        for line in lines {
            area.draw(&Text::new(line, (x + 26, y + 8), text_style.clone()))
                .map_err(err)?;
            y += 16;
        }
        y += 4;
    }
    Ok(())
}

/// Draws a marker at `p` in chart coordinates.
fn draw_marker<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    p: (f64, f64),
    triangle: bool,
    filled: bool,
    c: RGBColor,
) -> Result<(), String> {
    for (size, style) in marker_parts(triangle, filled, c) {
        if size == 0 {
            continue;
        }
        if triangle {
            chart
                .draw_series(std::iter::once(TriangleMarker::new(p, size, style)))
                .map_err(err)?;
        } else {
            chart
                .draw_series(std::iter::once(Circle::new(p, size, style)))
                .map_err(err)?;
        }
    }
    Ok(())
}

/// Draws one panel of Figure 1's upper row on `area`.
fn draw_bar_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: &BarPanel,
) -> Result<(), String> {
    let n = panel.groups.len().max(1);
    let top = panel
        .groups
        .iter()
        .flat_map(|g| g.bars.iter().map(|b| error_bar(b.mean, b.sd).1))
        .fold(0.0f64, f64::max);
    // Headroom for the two label lines and the legend above the tallest bar.
    let ymax = if top > 0.0 { top * 1.6 } else { 1.0 };
    let mut chart = panel_chart(area, &panel.title, (36, 70), 0f64..n as f64, 0f64..ymax)?;
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
    let value_style =
        TextStyle::from((FAMILY, 11).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
    let over_style = TextStyle::from((FAMILY, 11).into_font())
        .pos(Pos::new(HPos::Center, VPos::Bottom))
        .color(&RGBColor(170, 30, 30));
    for (slot, lock) in locks.iter().enumerate() {
        let c = colour(lock);
        let bars: Vec<(f64, &Bar)> = panel
            .groups
            .iter()
            .enumerate()
            .filter_map(|(i, g)| {
                g.bars
                    .iter()
                    .find(|b| b.lock == *lock)
                    .map(|b| (i as f64 + 0.1 + slot as f64 * width, b))
            })
            .collect();
        chart
            .draw_series(
                bars.iter().map(|(x, b)| {
                    Rectangle::new([(*x, 0.0), (*x + width * 0.9, b.mean)], c.filled())
                }),
            )
            .map_err(err)?
            .label(*lock)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
        chart
            .draw_series(bars.iter().map(|(x, b)| {
                let (lo, hi) = error_bar(b.mean, b.sd);
                ErrorBar::new_vertical(*x + width * 0.45, lo, b.mean, hi, BLACK.stroke_width(1), 8)
            }))
            .map_err(err)?;
        // The value over the error bar, the overhead over `none` above it.
        for (x, b) in &bars {
            let above = error_bar(b.mean, b.sd).1 + ymax * 0.01;
            let cx = *x + width * 0.45;
            chart
                .draw_series(std::iter::once(Text::new(
                    fmt_num(b.mean),
                    (cx, above),
                    value_style.clone(),
                )))
                .map_err(err)?;
            if let Some(o) = b.overhead {
                chart
                    .draw_series(std::iter::once(Text::new(
                        percent_label(o),
                        (cx, above + ymax * 0.045),
                        over_style.clone(),
                    )))
                    .map_err(err)?;
            }
        }
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
    draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
}

/// The fill of the paper's bars: white on x86, light grey on ARM (both outlined in black).
fn paper_fill(series: &str) -> RGBColor {
    if series.contains("x86_64") {
        WHITE
    } else {
        RGBColor(215, 215, 215)
    }
}

/// `area` split into the plot and, at its right, [`LEGEND_WIDTH`] pixels for the legend.
fn plot_and_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
) -> (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>) {
    let (w, _) = area.dim_in_pixel();
    area.split_horizontally(w.saturating_sub(LEGEND_WIDTH))
}

/// Draws Figure 1's overhead panel on `area` (its legend at the right).
fn draw_overhead_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: &OverheadPanel,
) -> Result<(), String> {
    let (plot, legend) = plot_and_legend(area);
    let n = panel.groups.len().max(1);
    let values = panel
        .groups
        .iter()
        .flat_map(|g| g.bars.iter().map(|b| b.percent));
    let (lo, hi) = values.fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let span = (hi - lo).max(1.0);
    let y = (lo - if lo < 0.0 { span * 0.12 } else { 0.0 })..(hi + span * 0.15);
    let mut chart = panel_chart(
        &plot,
        &format!(
            "round-trip overhead over none: ours beside the paper's ({})",
            paper::SOURCE
        ),
        (36, 70),
        0f64..n as f64,
        y,
    )?;
    let mut mesh = chart.configure_mesh();
    mesh.y_label_formatter(&|y| format!("{y:+.0}%"))
        .y_desc("overhead over none (%)")
        .label_style((FAMILY, 13))
        .axis_desc_style((FAMILY, 14))
        .disable_x_mesh()
        .x_labels(2)
        .x_label_formatter(&|_| String::new())
        .draw()
        .map_err(err)?;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(0.0, 0.0), (n as f64, 0.0)],
            BLACK.stroke_width(1),
        )))
        .map_err(err)?;
    let slots = panel
        .groups
        .iter()
        .map(|g| g.bars.len())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let width = 0.8 / slots;
    let label_up =
        TextStyle::from((FAMILY, 11).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
    let label_down =
        TextStyle::from((FAMILY, 11).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (i, g) in panel.groups.iter().enumerate() {
        // Centre the group's bars in its slot.
        let start = i as f64 + 0.5 - width * g.bars.len() as f64 / 2.0;
        for (k, b) in g.bars.iter().enumerate() {
            let x = start + k as f64 * width;
            let series = &panel.series[b.series];
            let corners = [(x, 0.0), (x + width * 0.9, b.percent)];
            if series.paper {
                let fill = paper_fill(&series.name);
                chart
                    .draw_series(std::iter::once(Rectangle::new(corners, fill.filled())))
                    .map_err(err)?;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        corners,
                        BLACK.stroke_width(2),
                    )))
                    .map_err(err)?;
            } else {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        corners,
                        place_colour(b.series).filled(),
                    )))
                    .map_err(err)?;
            }
            let (pos, style) = if b.percent >= 0.0 {
                (b.percent + span * 0.01, &label_up)
            } else {
                (b.percent - span * 0.01, &label_down)
            };
            chart
                .draw_series(std::iter::once(Text::new(
                    b.label.clone(),
                    (x + width * 0.45, pos),
                    style.clone(),
                )))
                .map_err(err)?;
        }
    }
    let (bx, by) = plot.get_base_pixel();
    let label_style =
        TextStyle::from((FAMILY, 13).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    let (_, bottom) = chart.backend_coord(&(0.0, chart.y_range().start));
    for (i, g) in panel.groups.iter().enumerate() {
        let (px, _) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        let name = match lock_registry::Lock::parse(&g.lock).map(|l| l.entry().kind) {
            Some(lock_registry::Kind::BigLock) => format!("{} (big lock)", g.lock),
            Some(lock_registry::Kind::FineGrained) => "fine-grained".to_owned(),
            _ => g.lock.clone(),
        };
        plot.draw(&Text::new(
            name,
            (px - bx, bottom - by + 8),
            label_style.clone(),
        ))
        .map_err(err)?;
    }
    let entries: Vec<Entry> = panel
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| Entry {
            glyph: if s.paper {
                Glyph::OutlinedBox(paper_fill(&s.name))
            } else {
                Glyph::Box(place_colour(i))
            },
            text: s.name.clone(),
        })
        .collect();
    draw_side_legend(&legend, &entries, 40)
}

/// Draws Figure 1 on `root`: the platform panels side by side (widths by their groups), the
/// overhead panel below them.
fn draw_fig1<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    panels: &[BarPanel],
    overheads: Option<&OverheadPanel>,
) -> Result<(), String> {
    let Some(body) = draw_frame(
        root,
        "Figure 1: IPC round trip (Call + ReplyRecv) per locking strategy, mean ± std dev; \
         red: overhead over none",
        panels
            .is_empty()
            .then_some("no single-core ipc-roundtrip records were measured"),
    )?
    else {
        return Ok(());
    };
    let (upper, lower) = match overheads {
        Some(_) => {
            let (_, h) = body.dim_in_pixel();
            let (u, l) = body.split_vertically(h.saturating_sub(OVERHEAD_HEIGHT));
            (u, Some(l))
        }
        None => (body, None),
    };
    let weights: Vec<u32> = panels.iter().map(bar_panel_width).collect();
    let total: u32 = weights.iter().sum::<u32>().max(1);
    let (w, _) = upper.dim_in_pixel();
    let mut breaks = Vec::new();
    let mut acc = 0;
    for weight in &weights[..weights.len().saturating_sub(1)] {
        acc += weight;
        breaks.push((u64::from(acc) * u64::from(w) / u64::from(total)) as i32);
    }
    let areas = upper.split_by_breakpoints(breaks, Vec::<i32>::new());
    for (panel, area) in panels.iter().zip(&areas) {
        draw_bar_panel(area, panel)?;
    }
    if let (Some(area), Some(panel)) = (lower, overheads) {
        draw_overhead_panel(&area, panel)?;
    }
    Ok(())
}

/// The width of one of Figure 1's platform panels: room for its groups, at least its title's.
fn bar_panel_width(panel: &BarPanel) -> u32 {
    (120 + 210 * panel.groups.len() as u32).max(520)
}

/// Draws one panel of Figure 2 or 3 on `area`: lines, markers (hollow: oversubscribed,
/// triangles: emulated), error bars, the oversubscribed band, the clipped ideal line and the
/// legend at the right.
fn draw_line_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: &LinePanel,
) -> Result<(), String> {
    let (plot, legend) = plot_and_legend(area);
    let max_x = panel
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.x))
        .max()
        .unwrap_or(1)
        .max(2);
    let x_end = f64::from(max_x) + 0.5;
    let ymax = line_ymax(panel);
    let mut chart = panel_chart(&plot, &panel.title, (40, 80), 0.5f64..x_end, 0f64..ymax)?;
    // Every integer up to 16 (cores, clients); about ten round labels beyond (pages).
    mesh(&mut chart, &panel.unit)
        .x_labels((max_x as usize + 1).min(12))
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() < 1e-9 && *x >= 1.0 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        })
        .x_desc(panel.x_desc)
        .draw()
        .map_err(err)?;
    let mut entries = Vec::new();
    let over_from = oversubscribed_from(panel).filter(|x| *x < x_end);
    if let Some(from) = over_from {
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(from, 0.0), (x_end, ymax)],
                BLACK.mix(0.06).filled(),
            )))
            .map_err(err)?;
        let style = TextStyle::from((FAMILY, 12).into_font())
            .pos(Pos::new(HPos::Left, VPos::Top))
            .color(&RGBColor(90, 90, 90));
        chart
            .draw_series(std::iter::once(Text::new(
                "oversubscribed".to_owned(),
                (from + 0.05, ymax * 0.99),
                style,
            )))
            .map_err(err)?;
    }
    if panel.ideal {
        let base = panel
            .lines
            .iter()
            .find(|l| l.lock == "none")
            .and_then(|l| l.points.iter().find(|p| p.x == 1))
            .map(|p| p.mean)
            .filter(|m| *m > 0.0);
        if let Some(base) = base {
            chart
                .draw_series(DashedLineSeries::new(
                    clip_ideal(base, max_x, ymax),
                    6,
                    4,
                    GREY.stroke_width(1),
                ))
                .map_err(err)?;
            entries.push(Entry {
                glyph: Glyph::Dashed(GREY),
                text: "ideal: none at 1 core\nx cores".into(),
            });
        }
    }
    for line in &panel.lines {
        let c = colour(&line.lock);
        let pts: Vec<(f64, f64)> = line
            .points
            .iter()
            .map(|p| (f64::from(p.x), p.mean))
            .collect();
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(err)?;
        chart
            .draw_series(line.points.iter().map(|p| {
                let (lo, hi) = error_bar(p.mean, p.sd);
                ErrorBar::new_vertical(f64::from(p.x), lo, p.mean, hi, c.stroke_width(1), 8)
            }))
            .map_err(err)?;
        for p in &line.points {
            draw_marker(
                &mut chart,
                (f64::from(p.x), p.mean),
                panel.emulated,
                !p.oversubscribed,
                c,
            )?;
        }
        entries.push(Entry {
            glyph: Glyph::Line(c),
            text: line.lock.clone(),
        });
    }
    if panel.emulated {
        entries.push(Entry {
            glyph: Glyph::Triangle(true),
            text: "triangles: emulated\n(QEMU TCG, not native)".into(),
        });
    }
    if over_from.is_some() {
        entries.push(Entry {
            glyph: if panel.emulated {
                Glyph::Triangle(false)
            } else {
                Glyph::Circle(false)
            },
            text: format!(
                "hollow: oversubscribed\n(the host has {} cores)",
                panel.host_cores
            ),
        });
    }
    entries.push(Entry {
        glyph: Glyph::ErrorBar(BLACK),
        text: "error bars: ± 1 std dev\n(cut at 0)".into(),
    });
    draw_side_legend(&legend, &entries, 40)
}

/// Draws Figure 2 or 3 on `root`: the panels in a grid of at most `cols` columns.
fn draw_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    empty: &str,
    panels: &[LinePanel],
    cols: usize,
) -> Result<(), String> {
    let Some(body) = draw_frame(root, title, panels.is_empty().then_some(empty))? else {
        return Ok(());
    };
    for (panel, area) in panels
        .iter()
        .zip(body.split_evenly(grid(panels.len(), cols)))
    {
        draw_line_panel(&area, panel)?;
    }
    Ok(())
}

/// Which figure.
#[derive(Clone, Copy, Debug)]
enum Figure {
    RoundTrip,
    Throughput,
    ClientServer,
}

/// Draws `figure` onto one backend.
fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    figure: Figure,
    records: &[Record],
) -> Result<(), String> {
    match figure {
        Figure::RoundTrip => draw_fig1(
            &root,
            &fig1_panels(records),
            fig1_overheads(records).as_ref(),
        )?,
        Figure::Throughput => draw_lines(
            &root,
            "Figure 2: multicore ping-pong throughput (one pair per core), mean ± std dev",
            "no multicore-pingpong records were measured",
            &fig2_panels(records),
            max_cols(figure),
        )?,
        Figure::ClientServer => draw_lines(
            &root,
            "Figure 3: client-server throughput (clients calling a shared server or one each), \
             mean ± std dev",
            "no client-server records were measured",
            &fig3_panels(records),
            max_cols(figure),
        )?,
    }
    root.present().map_err(err)
}

/// The figures' file stems, in order.
pub const STEMS: [&str; 3] = [
    "ipc-roundtrip",
    "multicore-throughput",
    "clientserver-throughput",
];

/// The pixel size of `figure` for `records`.
fn size(figure: Figure, records: &[Record]) -> (u32, u32) {
    match figure {
        Figure::RoundTrip => {
            let panels = fig1_panels(records);
            let width: u32 = panels.iter().map(bar_panel_width).sum();
            let lower = if fig1_overheads(records).is_some() {
                OVERHEAD_HEIGHT
            } else {
                0
            };
            (width.max(1100), 440 + lower + TITLE)
        }
        Figure::Throughput | Figure::ClientServer => {
            let n = match figure {
                Figure::Throughput => fig2_panels(records).len(),
                _ => fig3_panels(records).len(),
            };
            let (rows, cols) = grid(n, max_cols(figure));
            // Wide enough for the figure's title.
            (
                (PANEL.0 * cols as u32).max(1100),
                PANEL.1 * rows as u32 + TITLE,
            )
        }
    }
}

/// Writes a figure of line panels as `dir/stem.svg` and `dir/stem.png` (the memory suite's
/// figures); `empty` is shown when there are no panels. Returns the paths written.
pub fn write_lines(
    dir: &Path,
    stem: &str,
    title: &str,
    empty: &str,
    panels: &[LinePanel],
) -> Result<Vec<PathBuf>, String> {
    let (rows, cols) = grid(panels.len(), 2);
    let size = (
        (PANEL.0 * cols as u32).max(1100),
        PANEL.1 * rows as u32 + TITLE,
    );
    let lines = Lines {
        title,
        empty,
        panels,
        cols,
    };
    Ok(svg_and_png(&dir.join(format!("{stem}.svg")), size, &lines)?.to_vec())
}

/// A figure of line panels, as [`write_lines`] draws it.
struct Lines<'a> {
    title: &'a str,
    empty: &'a str,
    panels: &'a [LinePanel],
    cols: usize,
}

impl Drawing for Lines<'_> {
    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
        _path: &Path,
    ) -> Result<(), String> {
        draw_lines(&root, self.title, self.empty, self.panels, self.cols)?;
        root.present().map_err(err)
    }
}

/// A figure that draws the same on any plotters backend, so that [`svg_and_png`] writes it
/// both ways.
pub trait Drawing {
    /// Draws the figure on `root`; errors name `path`, the file `root` writes.
    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
        path: &Path,
    ) -> Result<(), String>;
}

/// Draws `drawing` as SVG at `svg` and as PNG beside it (the same name, `.png`), both `size`
/// pixels, with the embedded font; returns the two paths.
pub fn svg_and_png(
    svg: &Path,
    size: (u32, u32),
    drawing: &impl Drawing,
) -> Result<[PathBuf; 2], String> {
    register_font()?;
    drawing.draw(SVGBackend::new(svg, size).into_drawing_area(), svg)?;
    let png = svg.with_extension("png");
    drawing.draw(BitMapBackend::new(&png, size).into_drawing_area(), &png)?;
    Ok([svg.to_path_buf(), png])
}

/// Writes the figures ([`STEMS`], each as SVG and PNG) into `dir`; returns the paths written.
pub fn write_all(dir: &Path, records: &[Record]) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    for (figure, stem) in [Figure::RoundTrip, Figure::Throughput, Figure::ClientServer]
        .into_iter()
        .zip(STEMS)
    {
        let svg = dir.join(format!("{stem}.svg"));
        let drawing = FigureOf { figure, records };
        written.extend(svg_and_png(&svg, size(figure, records), &drawing)?);
    }
    Ok(written)
}

/// One of the IPC suite's figures of `records`, as [`write_all`] draws it.
struct FigureOf<'a> {
    figure: Figure,
    records: &'a [Record],
}

impl Drawing for FigureOf<'_> {
    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
        _path: &Path,
    ) -> Result<(), String> {
        draw(root, self.figure, self.records)
    }
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
                let mut q = record(
                    "multicore-pingpong",
                    "armv7",
                    "qemu",
                    lock,
                    cores,
                    &[t / 100.0, t / 50.0],
                );
                q.variant = "pairs".into();
                v.push(q);
            }
            if lock != "none" {
                for (variant, clients) in [("shared", 1), ("shared", 2), ("dedicated", 1)] {
                    let mut r = record(
                        "client-server",
                        "x86_64",
                        "hosted",
                        lock,
                        clients + 1,
                        &[4e5, 5e5],
                    );
                    r.variant = variant.into();
                    r.clients = clients;
                    v.push(r);
                }
            }
        }
        v
    }

    #[test]
    fn bars_carry_their_overhead_over_none() {
        let p1 = fig1_panels(&records());
        assert_eq!(p1.len(), 2);
        assert_eq!(p1[0].unit, "cycles");
        assert_eq!(p1[1].groups.len(), 2);
        let bars = &p1[1].groups[0].bars;
        assert_eq!(
            bars.iter().map(|b| b.lock.as_str()).collect::<Vec<_>>(),
            ["none", "clh", "fine"]
        );
        assert_eq!(bars[0].overhead, None);
        assert!((bars[1].overhead.unwrap() - 50.0 / 280.0).abs() < 1e-12);
        assert_eq!(percent_label(bars[2].overhead.unwrap()), "+50%");
    }

    #[test]
    fn overheads_stand_beside_the_papers() {
        let o = fig1_overheads(&records()).unwrap();
        let names: Vec<&str> = o.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "ours: hosted host",
                "ours: qemu-icount microvm",
                "ours: qemu-icount sabrelite",
                "paper: x86_64 (Haswell i7-4770)",
                "paper: armv7 (Cortex-A9 i.MX6Q)",
            ]
        );
        assert_eq!(
            o.groups.iter().map(|g| g.lock.as_str()).collect::<Vec<_>>(),
            ["clh", "fine"]
        );
        let clh: Vec<&str> = o.groups[0].bars.iter().map(|b| b.label.as_str()).collect();
        // hosted: 450/400 (the fixture's means), icount: 330/280 on both boards; paper +10%,
        // +20%.
        assert_eq!(clh, ["+13%", "+18%", "+18%", "+10%", "+20%"]);
        let fine: Vec<&str> = o.groups[1].bars.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(fine, ["+35%", "+50%", "+50%", "~+30%", "~+60%"]);
        // Nothing to compare without a `none` baseline.
        let no_base: Vec<Record> = records().into_iter().filter(|r| r.lock != "none").collect();
        assert_eq!(fig1_overheads(&no_base), None);
    }

    #[test]
    fn oversubscribed_and_emulated_points_are_marked() {
        let p2 = fig2_panels(&records());
        assert_eq!(p2.len(), 2);
        let hosted = &p2[0];
        assert!(!hosted.emulated);
        assert_eq!(hosted.lines.len(), 3);
        let flags: Vec<(u32, bool)> = hosted.lines[1]
            .points
            .iter()
            .map(|p| (p.x, p.oversubscribed))
            .collect();
        // The fixture's machine has 2 cores.
        assert_eq!(flags, [(1, false), (2, false), (4, true)]);
        assert_eq!(oversubscribed_from(hosted), Some(2.5));
        let qemu = &p2[1];
        assert!(qemu.emulated);
        assert!(qemu.title.contains("emulated"), "{}", qemu.title);
        // Client-server: x is clients, cores one more (the server's): 2 clients on 3 cores.
        let p3 = fig3_panels(&records());
        assert_eq!(
            p3.iter().map(|p| p.title.as_str()).collect::<Vec<_>>(),
            [
                "hosted (host threads): x86_64 host, shared",
                "hosted (host threads): x86_64 host, dedicated"
            ]
        );
        let shared = &p3[0];
        assert_eq!(shared.x_desc, "clients");
        assert!(!shared.ideal);
        let p = &shared.lines[0].points;
        assert_eq!((p[1].x, p[1].cores, p[1].oversubscribed), (2, 3, true));
        assert_eq!(oversubscribed_from(shared), Some(1.5));
        assert_eq!(oversubscribed_from(&p3[1]), None);
    }

    #[test]
    fn error_bars_stop_at_zero_and_the_ideal_line_at_the_data() {
        assert_eq!(error_bar(5.0, 8.0), (0.0, 13.0));
        assert_eq!(error_bar(5.0, 1.0), (4.0, 6.0));
        // The y range is the data's, not the ideal line's: none at 1 core is 0.97M, the
        // ideal at 4 cores 3.9M, the highest error bar ~3.96M.
        let hosted = &fig2_panels(&records())[0];
        let ymax = line_ymax(hosted);
        let top_bar = 4e6 * 0.97 * 1.02;
        assert!(ymax > top_bar && ymax < top_bar * 1.1, "{ymax}");
        // Cut where it leaves the plot.
        assert_eq!(
            clip_ideal(10.0, 4, 25.0),
            vec![(1.0, 10.0), (2.0, 20.0), (2.5, 25.0)]
        );
        assert_eq!(clip_ideal(10.0, 2, 25.0), vec![(1.0, 10.0), (2.0, 20.0)]);
        assert!(clip_ideal(10.0, 4, 5.0).is_empty());
    }

    #[test]
    fn legend_text_wraps_at_spaces() {
        assert_eq!(
            wrap("hollow: oversubscribed, more cores", 20),
            ["hollow:", "oversubscribed, more", "cores"]
        );
        assert_eq!(wrap("none", 20), ["none"]);
        assert_eq!(wrap("a b\nc", 20), ["a b", "c"]);
    }

    #[test]
    fn figures_are_written_as_svg_and_png() {
        let dir = std::env::temp_dir().join(format!("xtask-plot-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for recs in [records(), Vec::new()] {
            let files = write_all(&dir, &recs).unwrap();
            assert_eq!(files.len(), 6);
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
            // Asserts that the SVG figure `stem` says each of `needles`.
            let says = |stem: &str, needles: &[&str]| {
                let svg = std::fs::read_to_string(dir.join(format!("{stem}.svg"))).unwrap();
                for needle in needles {
                    assert!(svg.contains(needle), "{stem} lacks {needle}");
                }
            };
            if recs.is_empty() {
                says("clientserver-throughput", &["no client-server records"]);
                continue;
            }
            // What the figures must say on themselves.
            says(
                "ipc-roundtrip",
                &[
                    "+18%",
                    "~+60%",
                    "paper: x86_64",
                    "ours: qemu-icount sabrelite",
                ],
            );
            says(
                "multicore-throughput",
                &[
                    "hollow: oversubscribed",
                    "triangles: emulated",
                    "ideal",
                    "cut at 0",
                ],
            );
            says("clientserver-throughput", &["dedicated"]);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
