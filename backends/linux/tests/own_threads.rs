//! `system::threads_of` on the calling process: a one-thread process is
//! answered by `unshare(CLONE_THREAD)` without opening anything; with more
//! threads, its `/proc/PID/task` is opened once and kept. A harness-less
//! binary: `main` runs on the process's only thread, so the one-thread
//! answer is really taken.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use pmc_linux::system::{gettid, threads_of};

/// `/proc/self/task` read afresh, as the kernel lists it.
fn listed_afresh() -> Vec<i32> {
    let mut tids: Vec<i32> = std::fs::read_dir("/proc/self/task")
        .expect("read /proc/self/task")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    tids
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

fn main() {
    let me = std::process::id() as i32;
    let main_tid = gettid();
    assert_eq!(
        listed_afresh(),
        vec![main_tid],
        "the binary is not single-threaded"
    );

    let fds = open_fds();
    assert_eq!(threads_of(me).unwrap(), vec![main_tid]);
    for _ in 0..100 {
        assert_eq!(threads_of(me).unwrap(), vec![main_tid]);
    }
    // unshare answered: no directory was opened.
    assert_eq!(open_fds(), fds, "a one-thread listing opened an fd");

    // Two more threads: listed through the kept directory (rewound between
    // listings), as a fresh read lists them.
    let (tid_tx, tid_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let stop_rx = std::sync::Arc::new(std::sync::Mutex::new(stop_rx));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let tid_tx = tid_tx.clone();
            let stop_rx = stop_rx.clone();
            std::thread::spawn(move || {
                tid_tx.send(gettid()).unwrap();
                let _ = stop_rx.lock().unwrap().recv();
            })
        })
        .collect();
    let mut want = vec![main_tid, tid_rx.recv().unwrap(), tid_rx.recv().unwrap()];
    want.sort_unstable();
    assert_eq!(threads_of(me).unwrap(), want);
    // The directory stays open: one fd, not one per call.
    let kept = open_fds();
    assert_eq!(kept, fds + 1, "{fds} fds before, {kept} after a listing");
    for _ in 0..3 {
        assert_eq!(threads_of(me).unwrap(), want);
    }
    assert_eq!(open_fds(), kept, "a listing left an fd open");
    assert_eq!(listed_afresh(), want);
    drop(stop_tx);
    for t in threads {
        t.join().unwrap();
    }

    // Back to one thread (a joined thread may take a moment to leave the
    // kernel's list).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let got = threads_of(me).unwrap();
        if got == vec![main_tid] {
            break;
        }
        assert!(Instant::now() < deadline, "still listed: {got:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(open_fds(), kept, "a listing left an fd open");

    // Another process's threads are read afresh.
    let mut child = std::process::Command::new("sleep")
        .arg("10")
        .spawn()
        .expect("spawn sleep");
    let pid = child.id() as i32;
    assert_eq!(threads_of(pid).unwrap(), vec![pid]);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(open_fds(), kept, "listing another process left an fd open");
    println!("own_threads: ok");
}
