#!/usr/bin/env bash
# Builds hal-armv7's boot-demo kernel and boots it under QEMU (ELF loaded with -kernel).
#
#   hal-armv7/scripts/qemu-boot-demo.sh [sabrelite|virt] [smp] [cmdline...]
#   e.g. qemu-boot-demo.sh sabrelite 4          # default: sabrelite, 4 cores, empty cmdline
#        qemu-boot-demo.sh virt 2 fault=dabt    # expect the data abort report and status 1
#        MATRIX=1 qemu-boot-demo.sh             # sabrelite/virt x smp 1/4, summary only, and
#                                               # the abort-stack overflow report on both
#
# The kernel exits through semihosting (SYS_EXIT_EXTENDED): status 0 = success, 1 = failure
# reported by the kernel, 124 = timeout. QEMU itself also exits 0 on a guest reset under
# -no-reboot, so success additionally requires the kernel's final "all checks passed" line.
# The cmdline reaches the kernel through semihosting SYS_GET_CMDLINE (QEMU passes the kernel
# path followed by -append).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --quiet --release -p hal-armv7 --target armv7a-none-eabi --bin boot-demo
elf="$CARGO_TARGET_DIR/armv7a-none-eabi/release/boot-demo"

machine_args() { # machine
    case "$1" in
        # The i.MX6Q: 4x Cortex-A9; UART1 is serial0 (stdio). 1 GiB like the real board (the
        # image is linked at 0x4020_0000, inside both machines' RAM).
        sabrelite) echo "-M sabrelite -m 1G" ;;
        virt) echo "-M virt -cpu cortex-a15 -m 256M" ;;
        # virt with EL2: the kernel is entered in HYP mode and PSCI goes over smc.
        virt-el2) echo "-M virt,virtualization=on -cpu cortex-a15 -m 256M" ;;
        *) echo "unknown machine '$1' (sabrelite, virt, virt-el2)" >&2; exit 2 ;;
    esac
}

run() { # machine smp cmdline
    local args
    args=$(machine_args "$1")
    # shellcheck disable=SC2086 # word splitting of the machine arguments is intended
    timeout 30 qemu-system-arm $args -smp "$2" -kernel "$elf" \
        -display none -serial stdio -semihosting -no-reboot -append "$3"
}
# shellcheck source=../../hal-common/scripts/boot-demo-lib.sh
. hal-common/scripts/boot-demo-lib.sh

if [ -n "${MATRIX:-}" ]; then
    fails=0
    for m in sabrelite virt; do
        for s in 1 4; do
            matrix_boot 9 "$m" "$s"
            passed=$(grep -c 'boot-demo: all checks passed' <<<"$out" || true)
            if [ "$status" -ne 0 ] || [ "$online" != "cpus online: $s" ] || [ "$passed" -ne 1 ]; then
                fails=$((fails + 1))
                printf '%s\n' "$out" | tail -n 20 | sed 's/^/    | /'
            fi
        done
    done
    # An overflow of the abort stack itself (recursion in ABT mode) must be reported as a kernel
    # stack overflow with the kernel's failure status, not hang in nested aborts.
    for m in sabrelite virt; do
        set +e
        out=$(run "$m" 1 "fault=abtstack" 2>&1)
        status=$?
        set -e
        report=$(grep -c 'kernel stack overflow on CPU 0 (stack guard at 0x[0-9a-f]*: the ABT/IRQ stack' <<<"$out" || true)
        printf '%-9s smp 1 fault=abtstack: status %s, overflow reported: %s\n' "$m" "$status" "$report"
        if [ "$status" -ne 1 ] || [ "$report" -lt 1 ]; then
            fails=$((fails + 1))
            printf '%s\n' "$out" | tail -n 20 | sed 's/^/    | /'
        fi
    done
    echo "matrix: $fails failure(s)"
    [ "$fails" -eq 0 ]
else
    single_boot sabrelite 0 "$@"
fi
