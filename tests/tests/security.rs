//! Security: a thread can reach only objects its CSpace names. An attacker that holds no
//! capability to a victim endpoint, frame, address space or thread tries every system call with
//! every slot index (and out-of-range ones) in every argument position; nothing of the victim's
//! changes, and every attempt fails with a capability error.

use kernel::config::{CSPACE_SLOTS, MAX_CPUS};
use kernel::syscall::{nr, result};
use kernel::{
    BigLock, CapSlot, Error, Kernel, Life, MapPrepError, ObjRef, Rights, Syscall, ThreadState,
};
use kernel_locks::TicketLock;
use tests::{FakeHal, HostRelax};

fn slot(i: usize) -> CapSlot {
    CapSlot::new(i).unwrap()
}

#[test]
fn no_capability_no_access() {
    let mut k = Box::new(Kernel::new(
        BigLock::new(TicketLock::<HostRelax>::with_relax_and_cpus(MAX_CPUS)),
        FakeHal::new(2),
        2,
    ));
    // The victim's world.
    let secret_ep = k.create_endpoint().unwrap();
    let secret_as = k.create_address_space(0x5EC0_0000).unwrap();
    let secret_frame = k
        .create_memory(0x5EC1_0000, 1, kernel::MemKind::Ram)
        .unwrap();
    let secret_ntfn = k.create_notification().unwrap();
    let victim = k.create_thread(10, 1, Some(secret_as)).unwrap();
    k.install_cap(victim, slot(0), ObjRef::Endpoint(secret_ep), Rights::ALL, 0)
        .unwrap();
    k.install_cap(
        victim,
        slot(1),
        ObjRef::Notification(secret_ntfn),
        Rights::ALL,
        0,
    )
    .unwrap();
    k.start(victim).unwrap();
    assert_eq!(k.timer_tick(1).thread, Some(victim));
    assert_eq!(
        k.syscall(1, Syscall::Recv { ep: slot(0) }.encode()).thread,
        None
    );
    // The attacker's own objects: an endpoint and a notification without rights (so that it
    // cannot block), an address space, a frame and its own thread, read-only.
    let own_ep = k.create_endpoint().unwrap();
    let own_as = k.create_address_space(0xA000).unwrap();
    let own_frame = k.create_memory(0xB000, 1, kernel::MemKind::Ram).unwrap();
    let own_ntfn = k.create_notification().unwrap();
    let attacker = k.create_thread(10, 0, Some(own_as)).unwrap();
    k.install_cap(attacker, slot(0), ObjRef::Endpoint(own_ep), Rights::NONE, 0)
        .unwrap();
    k.install_cap(
        attacker,
        slot(1),
        ObjRef::Notification(own_ntfn),
        Rights::NONE,
        0,
    )
    .unwrap();
    k.install_cap(
        attacker,
        slot(2),
        ObjRef::AddressSpace(own_as),
        Rights::READ,
        0,
    )
    .unwrap();
    k.install_cap(
        attacker,
        slot(3),
        ObjRef::Memory(own_frame),
        Rights::READ,
        0,
    )
    .unwrap();
    k.install_cap(attacker, slot(4), ObjRef::Thread(attacker), Rights::READ, 0)
        .unwrap();
    k.start(attacker).unwrap();
    assert_eq!(k.timer_tick(0).thread, Some(attacker));

    let mut attempts = 0u64;
    for num in 1..=nr::MAX + 2 {
        if num == nr::CAP_DELETE {
            continue; // only empties the attacker's own CSpace
        }
        for s in 0..CSPACE_SLOTS + 3 {
            for other in [
                0,
                1,
                2,
                3,
                4,
                5,
                17,
                CSPACE_SLOTS + 1,
                kernel::syscall::MINT_SELF,
            ] {
                let raw = [num, s, other, 0x4000, 3, 0];
                let e = k.syscall(0, raw);
                attempts += 1;
                assert_eq!(
                    e.thread,
                    Some(attacker),
                    "attacker blocked or descheduled by {raw:?}"
                );
                if result(&e.regs).is_ok() {
                    assert_eq!(num, nr::YIELD, "{raw:?} succeeded");
                }
            }
        }
    }
    // The victim and its objects are untouched.
    assert_eq!(
        k.thread_state(victim),
        (Life::Alive, ThreadState::BlockedRecv(secret_ep))
    );
    assert_eq!(k.thread_sched(victim), (10, 1));
    assert_eq!(k.hal().pt.leaves(0x5EC0_0000).len(), 0);
    assert_eq!(
        k.hal().pt.leaves(0xA000).len(),
        0,
        "READ on an address space cannot map"
    );
    assert_eq!(k.notification_word(secret_ntfn), 0);
    assert_eq!(
        k.cap_of(victim, slot(0)).map(|c| c.obj),
        Some(ObjRef::Endpoint(secret_ep))
    );
    assert_eq!(
        k.hal()
            .log(1)
            .iter()
            .filter(|e| !matches!(e, tests::HalEvent::Switch(_)))
            .count(),
        0
    );
    let _ = (secret_frame, Error::InvalidCap);
    k.check_invariants().unwrap();
    assert!(attempts > 7_000);
}

#[test]
fn rights_are_enforced_per_capability() {
    let mut k = Box::new(Kernel::new(
        BigLock::new(TicketLock::<HostRelax>::with_relax_and_cpus(MAX_CPUS)),
        FakeHal::new(1),
        1,
    ));
    let ep = k.create_endpoint().unwrap();
    let f = k.create_memory(0x1000, 1, kernel::MemKind::Ram).unwrap();
    let a = k.create_address_space(0x2000).unwrap();
    let t = k.create_thread(10, 0, Some(a)).unwrap();
    let other = k.create_thread(10, 0, Some(a)).unwrap();
    k.install_cap(t, slot(0), ObjRef::Endpoint(ep), Rights::READ, 0)
        .unwrap();
    k.install_cap(t, slot(1), ObjRef::Memory(f), Rights::READ, 0)
        .unwrap();
    k.install_cap(t, slot(2), ObjRef::AddressSpace(a), Rights::WRITE, 0)
        .unwrap();
    k.install_cap(
        t,
        slot(3),
        ObjRef::Thread(other),
        Rights::READ | Rights::WRITE | Rights::GRANT,
        0,
    )
    .unwrap();
    k.start(t).unwrap();
    k.timer_tick(0);
    let err = |e: kernel::Exit| result(&e.regs).unwrap_err();
    assert_eq!(
        err(k.syscall(
            0,
            Syscall::Send {
                ep: slot(0),
                msg: [0; 4]
            }
            .encode()
        )),
        Error::MissingRight
    );
    let map_rw = Syscall::MapPage {
        aspace: slot(2),
        mem: slot(1),
        vaddr: 0x3000,
        attrs: kernel::PageAttrs::WRITE,
        offset: 0,
    };
    assert_eq!(
        err(k.syscall(0, map_rw.encode())),
        Error::MissingRight,
        "read-only frame cannot be mapped writable"
    );
    for sc in [
        Syscall::Suspend { thread: slot(3) },
        Syscall::DeleteThread { thread: slot(3) },
        Syscall::SetPriority {
            thread: slot(3),
            priority: 31,
        },
        Syscall::SetAffinity {
            thread: slot(3),
            core: 0,
        },
        Syscall::Resume { thread: slot(3) },
    ] {
        assert_eq!(
            err(k.syscall(0, sc.encode())),
            Error::MissingRight,
            "{sc:?}"
        );
    }
    // Minting cannot add MANAGE.
    let mint = Syscall::Mint {
        src: slot(3),
        target: kernel::MintTarget::Own,
        dest: slot(9),
        rights: Rights::MANAGE,
        badge: 0,
    };
    assert_eq!(err(k.syscall(0, mint.encode())), Error::MissingRight);
    assert_eq!(k.thread_state(other), (Life::Alive, ThreadState::Inactive));
    k.check_invariants().unwrap();
}

/// A user cannot make the kernel fail (or panic) by exhausting the HAL's page-table memory or
/// by mapping over pages the image loader mapped: MapPage fails in its decode phase with
/// `OutOfMemory` or `AlreadyMapped`, and no page-table write reaches the HAL.
#[test]
fn map_frame_failing_hal_preparation_changes_nothing() {
    let mut k = Box::new(Kernel::new(
        BigLock::new(TicketLock::<HostRelax>::with_relax_and_cpus(MAX_CPUS)),
        FakeHal::new(1),
        1,
    ));
    let f = k.create_memory(0x1000, 1, kernel::MemKind::Ram).unwrap();
    let a = k.create_address_space(0x2000).unwrap();
    let t = k.create_thread(10, 0, Some(a)).unwrap();
    k.install_cap(t, slot(1), ObjRef::Memory(f), Rights::READ, 0)
        .unwrap();
    k.install_cap(t, slot(2), ObjRef::AddressSpace(a), Rights::WRITE, 0)
        .unwrap();
    k.start(t).unwrap();
    k.timer_tick(0);
    let map = Syscall::MapPage {
        aspace: slot(2),
        mem: slot(1),
        vaddr: 0x3000,
        attrs: kernel::PageAttrs::empty(),
        offset: 0,
    };
    let maps = |hal: &FakeHal| {
        hal.log(0)
            .iter()
            .filter(|e| matches!(e, tests::HalEvent::Map(..)))
            .count()
    };
    for (fail, want) in [
        (MapPrepError::OutOfMemory, Error::OutOfMemory),
        (MapPrepError::Occupied, Error::AlreadyMapped),
    ] {
        k.hal().fail_prepare_map(Some(fail));
        let regs = k.syscall(0, map.encode()).regs;
        assert_eq!(result(&regs).unwrap_err(), want);
        assert_eq!(k.hal().pt.leaves(0x2000).len(), 0);
        assert_eq!(maps(k.hal()), 0);
        k.check_invariants().unwrap();
    }
    k.hal().fail_prepare_map(None);
    result(&k.syscall(0, map.encode()).regs).expect("map after recovery");
    assert_eq!(k.hal().pt.leaves(0x2000).len(), 1);
    assert_eq!(maps(k.hal()), 1);
    k.check_invariants().unwrap();
}
