#!/usr/bin/env bash
# Builds hal-x86's boot-demo kernel and boots it under QEMU (PVH, no bootloader).
#
#   hal-x86/scripts/qemu-boot-demo.sh [machine] [smp] [cmdline...]
#   e.g. qemu-boot-demo.sh microvm 4            # default: microvm, 4 cores, empty cmdline
#        qemu-boot-demo.sh q35 2 fault=ud       # expect the #UD report and status 35
#        MATRIX=1 qemu-boot-demo.sh             # microvm/q35/pc x smp 1/2/4, summary only
#
# QEMU's exit status: 33 = success (isa-debug-exit value 0x10), 35 = failure reported by the
# kernel (0x11), 0 = triple fault under -no-reboot, 124 = timeout. Only 33 means success.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --quiet --release -p hal-x86 --target x86_64-unknown-none --bin boot-demo
elf="$CARGO_TARGET_DIR/x86_64-unknown-none/release/boot-demo"

run() { # machine smp cmdline
    timeout 30 qemu-system-x86_64 -M "$1" -cpu max -smp "$2" -m 256M -kernel "$elf" \
        -display none -serial stdio -no-reboot \
        -device isa-debug-exit,iobase=0xf4,iosize=0x04 -append "$3"
}
# shellcheck source=../../hal-common/scripts/boot-demo-lib.sh
. hal-common/scripts/boot-demo-lib.sh

if [ -n "${MATRIX:-}" ]; then
    fails=0
    for m in microvm q35 pc; do
        for s in 1 2 4; do
            matrix_boot 8 "$m" "$s"
            if [ "$status" -ne 33 ] || [ "$online" != "cpus online: $s" ]; then fails=$((fails + 1)); fi
        done
    done
    echo "matrix: $fails failure(s)"
    [ "$fails" -eq 0 ]
else
    single_boot microvm 33 "$@"
fi
