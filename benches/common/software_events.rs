/// Ten software events every Linux kernel has (and the simulator counts):
/// what the open-cost and many-CPU benches open, no PMU needed.
pub const SOFTWARE_EVENTS: [&str; 10] = [
    "cpu-clock",
    "task-clock",
    "page-faults",
    "context-switches",
    "cpu-migrations",
    "minor-faults",
    "major-faults",
    "alignment-faults",
    "emulation-faults",
    "dummy",
];
