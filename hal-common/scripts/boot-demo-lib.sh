# What the HALs' qemu-boot-demo.sh scripts share, sourced by them after they define
# `run MACHINE SMP CMDLINE` (one QEMU boot of their boot-demo kernel).
#
#   matrix_boot WIDTH MACHINE SMP   boots MACHINE with SMP cores and an empty command line, sets
#                                   $out (the console), $status (QEMU's) and $online (the
#                                   kernel's `cpus online: N` line) and prints the summary row
#                                   (MACHINE padded to WIDTH)
#   single_boot DEFAULT_MACHINE SUCCESS [machine] [smp] [cmdline...]
#                                   one boot as the command line asks (4 cores by default);
#                                   succeeds when QEMU exits with SUCCESS

matrix_boot() { # width machine smp
    local start ms
    start=$(date +%s%N)
    set +e
    out=$(run "$2" "$3" "" 2>&1)
    status=$?
    set -e
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    online=$(grep -o 'cpus online: [0-9]*' <<<"$out" || true)
    printf "%-${1}s smp %s: status %s, %s, %s ms wall\n" "$2" "$3" "$status" "$online" "$ms"
}

single_boot() { # default-machine success-status [machine] [smp] [cmdline...]
    local success="$2" machine="${3:-$1}" smp="${4:-4}"
    shift 2
    shift $(( $# < 2 ? $# : 2 ))
    set +e
    run "$machine" "$smp" "$*"
    status=$?
    set -e
    echo "qemu exit status: $status ($success = success)"
    [ "$status" -eq "$success" ]
}
