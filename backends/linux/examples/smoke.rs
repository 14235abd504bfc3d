use pmc_linux::attr::*;
use pmc_linux::event::*;
fn main() {
    let attr = Attr::new(EventConfig::Software(Software::TaskClock))
        .disabled(true)
        .read_format(
            ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::TOTAL_TIME_RUNNING | ReadFormat::ID,
        );
    let ev = Event::open(&attr, Target::CALLER, None, OpenFlags::empty()).unwrap();
    ev.enable().unwrap();
    let s: u64 = (0..10_000_000u64).map(|x| x ^ 3).sum();
    ev.disable().unwrap();
    println!("{s} {:?}", ev.read().unwrap());
    for e in [
        EventConfig::Hardware {
            event: Hardware::Instructions,
            pmu: None,
        },
        EventConfig::Raw(0xc0),
    ] {
        let a = Attr::new(e).exclude_kernel(true);
        println!(
            "{}",
            Event::open(&a, Target::CALLER, None, OpenFlags::empty()).unwrap_err()
        );
    }
    let a = Attr::new(EventConfig::Software(Software::TaskClock));
    println!(
        "{}",
        Event::open(&a, Target::cpu(0), None, OpenFlags::empty())
            .map(|_| "ok".to_string())
            .unwrap_or_else(|e| e.to_string())
    );
    println!(
        "{}",
        Event::open(&a, Target::task(999999), None, OpenFlags::empty()).unwrap_err()
    );
}
