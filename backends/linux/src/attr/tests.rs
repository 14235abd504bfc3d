use super::*;

#[test]
fn cache_config_encodes_id_op_result() {
    let e = CacheEvent {
        cache: CacheId::L1D,
        op: CacheOp::Read,
        result: CacheResult::Miss,
    };
    assert_eq!(e.config(), 0x10000);
    assert_eq!(e.name(), "L1-dcache-load-misses");
    assert_eq!(CacheEvent::all().count(), 42);
    let llc = CacheEvent {
        cache: CacheId::LL,
        op: CacheOp::Write,
        result: CacheResult::Access,
    };
    assert_eq!(llc.config(), 0x102);
    assert_eq!(llc.name(), "LLC-stores");
}

#[test]
fn hybrid_hardware_uses_the_extended_type() {
    let a = Attr::new(EventConfig::Hardware {
        event: Hardware::Instructions,
        pmu: Some(8),
    });
    assert_eq!(a.type_id(), 0);
    assert_eq!(a.get_config(), (8 << 32) | 1);
}

#[test]
fn freq_and_period_share_the_union() {
    let a = Attr::new(EventConfig::Software(Software::CpuClock)).sample_freq(4000);
    assert!(a.is_set(AttrBit::FREQ));
    assert_eq!(a.get_sample_period_or_freq(), 4000);
    let a = a.sample_period(10_000);
    assert!(!a.is_set(AttrBit::FREQ));
    assert_eq!(a.get_sample_period_or_freq(), 10_000);
}

#[test]
fn bytes_follow_the_declared_size() {
    let a = Attr::new(EventConfig::Raw(0xc0)).config3(7);
    let b = a.to_bytes();
    assert_eq!(b.len(), 136);
    assert_eq!(&b[128..136], &7u64.to_ne_bytes());
    assert_eq!(a.size(64).to_bytes().len(), 64);
}

#[test]
fn breakpoint_fields_land_in_config1_and_config2() {
    let a = Attr::new(EventConfig::Breakpoint {
        access: BreakpointAccess::Write,
        addr: 0x1000,
        len: 8,
    });
    assert_eq!(a.type_id(), 5);
    assert_eq!(a.get_bp_type(), 2);
    assert_eq!(a.get_config1(), 0x1000);
    assert_eq!(a.get_config2(), 8);
    assert!(format!("{a:?}").contains("bp_type"));
}
