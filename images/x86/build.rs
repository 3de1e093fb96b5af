//! Builds the user programs for x86_64-unknown-none and links the image with hal-x86's linker script; see
//! `images/common/build_image.rs`.

#[path = "../common/build_image.rs"]
mod build_image;

fn main() {
    build_image::build_image("image-x86", "hal-x86", "x86_64-unknown-none");
}
