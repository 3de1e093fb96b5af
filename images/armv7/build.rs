//! Builds the user programs for armv7a-none-eabi and links the image with hal-armv7's linker script; see
//! `images/common/build_image.rs`.

#[path = "../common/build_image.rs"]
mod build_image;

fn main() {
    build_image::build_image("image-armv7", "hal-armv7", "armv7a-none-eabi");
}
