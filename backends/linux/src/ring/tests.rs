//! The head/tail protocol without a kernel: the ring is mapped from an
//! anonymous file, and the test plays the kernel, writing records into the
//! data area and `data_head` into the metadata page at the offsets of
//! `struct perf_event_mmap_page` (linux/perf_event.h: `data_head` at 1024,
//! `data_tail` at 1032; the data area starts one page in), and reading
//! back the `data_tail` the reader publishes.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::time::Instant;

use super::*;

/// The kernel's side of a ring of `data_pages` pages.
struct Kernel {
    file: File,
    page: usize,
    size: usize,
}

impl Kernel {
    fn new(data_pages: usize) -> Kernel {
        let page = sys::page_size();
        let file = tempfile::tempfile().expect("anonymous file");
        file.set_len(((data_pages + 1) * page) as u64).unwrap();
        Kernel {
            file,
            page,
            size: data_pages * page,
        }
    }

    /// A reader over this ring, as `RingBuffer::new` builds one over an
    /// event's mapping.
    fn reader(&self) -> RingBuffer {
        let map = Mmap::new(self.file.as_fd(), self.page + self.size, true, true).unwrap();
        let fd: OwnedFd = self.file.try_clone().unwrap().into();
        let tail = map.load_u64_acquire(mp::DATA_TAIL);
        RingBuffer {
            map,
            fd,
            page: self.page,
            size: self.size,
            pending: 0,
            tail,
            scratch: Vec::new(),
        }
    }

    fn u64_at(&self, offset: usize) -> u64 {
        let mut b = [0u8; 8];
        self.file.read_exact_at(&mut b, offset as u64).unwrap();
        u64::from_ne_bytes(b)
    }

    fn head(&self) -> u64 {
        self.u64_at(mp::DATA_HEAD)
    }

    fn tail(&self) -> u64 {
        self.u64_at(mp::DATA_TAIL)
    }

    /// Positions both head and tail at `at` (a ring that has carried
    /// `at` bytes before).
    fn start_at(&self, at: u64) {
        self.file
            .write_all_at(&at.to_ne_bytes(), mp::DATA_HEAD as u64)
            .unwrap();
        self.file
            .write_all_at(&at.to_ne_bytes(), mp::DATA_TAIL as u64)
            .unwrap();
    }

    /// Writes `bytes` at the head (wrapping at the end of the data area)
    /// and then publishes the new head.
    fn publish(&self, bytes: &[u8]) {
        let head = self.head();
        for (i, b) in bytes.iter().enumerate() {
            let at = (head as usize + i) % self.size;
            self.file
                .write_all_at(&[*b], (self.page + at) as u64)
                .unwrap();
        }
        let head = head + bytes.len() as u64;
        self.file
            .write_all_at(&head.to_ne_bytes(), mp::DATA_HEAD as u64)
            .unwrap();
    }
}

/// A record of `size` bytes (a multiple of 8): header with type `tag`,
/// then bytes counting up from `tag`.
fn record(tag: u8, size: u16) -> Vec<u8> {
    let mut r = Vec::with_capacity(usize::from(size));
    r.extend_from_slice(&u32::from(tag).to_ne_bytes());
    r.extend_from_slice(&0u16.to_ne_bytes());
    r.extend_from_slice(&size.to_ne_bytes());
    r.extend((8..size).map(|i| tag.wrapping_add(i as u8)));
    r
}

#[test]
fn records_come_out_whole_and_the_tail_follows_the_reader() {
    let kernel = Kernel::new(1);
    let mut ring = kernel.reader();
    assert_eq!(ring.data_size(), kernel.size);
    assert_eq!(ring.available(), 0);
    assert!(ring.next_record().is_none());
    let (a, b) = (record(1, 24), record(2, 16));
    kernel.publish(&a);
    kernel.publish(&b);
    assert_eq!(ring.available(), 40);
    assert_eq!(ring.next_record(), Some(&a[..]));
    // Held: its space is not given back yet, but it is no longer
    // available to read.
    assert_eq!((kernel.tail(), ring.available()), (0, 16));
    assert_eq!(ring.next_record(), Some(&b[..]));
    assert_eq!((kernel.tail(), ring.available()), (24, 0));
    ring.release();
    assert_eq!((kernel.tail(), ring.available()), (40, 0));
    // Releasing twice gives nothing more back.
    ring.release();
    assert_eq!(kernel.tail(), 40);
    assert!(ring.next_record().is_none());
    assert_eq!(kernel.tail(), 40);
    // A header-only record (8 bytes) is a record.
    let header = record(3, 8);
    kernel.publish(&header);
    assert_eq!(ring.next_record(), Some(&header[..]));
    assert!(ring.next_record().is_none());
    assert_eq!(kernel.tail(), 48);
}

#[test]
fn a_record_across_the_end_of_the_data_area_is_reassembled() {
    for data_pages in [1, 2] {
        let kernel = Kernel::new(data_pages);
        let size = kernel.size as u64;
        // The ring has carried almost three laps: the next record starts
        // 16 bytes before the end and continues at the start.
        kernel.start_at(3 * size - 16);
        let mut ring = kernel.reader();
        let (a, b) = (record(7, 40), record(8, 32));
        kernel.publish(&a);
        kernel.publish(&b);
        assert_eq!(ring.available(), 72);
        assert_eq!(ring.next_record(), Some(&a[..]), "{data_pages} pages");
        assert_eq!(ring.next_record(), Some(&b[..]), "{data_pages} pages");
        assert!(ring.next_record().is_none());
        assert_eq!(kernel.tail(), 3 * size + 56);
        // The header itself may sit in the last 8 bytes.
        kernel.start_at(4 * size - 8);
        let mut ring = kernel.reader();
        let c = record(9, 24);
        kernel.publish(&c);
        assert_eq!(ring.next_record(), Some(&c[..]), "{data_pages} pages");
    }
}

/// `take_all_into` appends the published bytes in order (across the end
/// of the data area too), gives them all back, and appends nothing more
/// until more is published; a record the reader held is not copied again.
#[test]
fn take_all_copies_every_published_record_and_gives_the_space_back() {
    let kernel = Kernel::new(1);
    let size = kernel.size as u64;
    kernel.start_at(2 * size - 16);
    let mut ring = kernel.reader();
    let (a, b, c) = (record(1, 24), record(2, 40), record(3, 16));
    kernel.publish(&a);
    kernel.publish(&b);
    assert_eq!(ring.next_record(), Some(&a[..]));
    let mut out = vec![0xee];
    assert_eq!(ring.take_all_into(&mut out), 40);
    assert_eq!(out[1..], b[..]);
    assert_eq!(kernel.tail(), 2 * size + 48);
    assert_eq!(ring.take_all_into(&mut out), 0);
    kernel.publish(&c);
    assert_eq!(ring.take_all_into(&mut out), 16);
    assert_eq!(out[41..], c[..]);
    assert_eq!((kernel.tail(), ring.available()), (2 * size + 64, 0));
    assert!(ring.next_record().is_none());
}

#[test]
fn a_corrupt_header_drops_what_was_published() {
    // A size below the 8-byte header, or beyond what the head published:
    // the reader skips to the head rather than loop or read garbage.
    for bad_size in [0u16, 7, 48] {
        let kernel = Kernel::new(1);
        let mut ring = kernel.reader();
        let mut bad = record(5, 16);
        bad[6..8].copy_from_slice(&bad_size.to_ne_bytes());
        kernel.publish(&bad);
        kernel.publish(&record(6, 16));
        assert!(ring.next_record().is_none(), "size {bad_size}");
        assert_eq!(kernel.tail(), 32, "size {bad_size}");
        assert_eq!(ring.available(), 0);
        // Later records read normally.
        let good = record(7, 16);
        kernel.publish(&good);
        assert_eq!(ring.next_record(), Some(&good[..]), "size {bad_size}");
    }
    // A record exactly as long as what was published is whole.
    let kernel = Kernel::new(1);
    let mut ring = kernel.reader();
    let whole = record(4, 64);
    kernel.publish(&whole);
    assert_eq!(ring.next_record(), Some(&whole[..]));
}

#[test]
fn a_reader_starts_at_the_published_tail() {
    // A second reader of a buffer (or one mapped after records were
    // consumed) starts where data_tail says, not at 0.
    let kernel = Kernel::new(1);
    kernel.start_at(1000);
    let first = record(1, 16);
    kernel.publish(&first);
    let mut ring = kernel.reader();
    assert_eq!(ring.available(), 16);
    assert_eq!(ring.wait(Some(Duration::ZERO)).unwrap(), Wait::Ready);
    assert_eq!(ring.next_record(), Some(&first[..]));
    ring.release();
    assert_eq!(kernel.tail(), 1016);
}

/// A reader whose fd (what `wait` polls) is the read end of a pipe: it
/// polls readable only when the test writes to the pipe, and hangs up when
/// the test drops the write end, as the event's fd does when its task
/// exits.
fn reader_polling(kernel: &Kernel) -> (RingBuffer, std::io::PipeWriter) {
    let (read_end, write_end) = std::io::pipe().unwrap();
    let mut ring = kernel.reader();
    ring.fd = OwnedFd::from(read_end);
    (ring, write_end)
}

#[test]
fn wait_reports_timeout_readiness_and_hang_up() {
    let kernel = Kernel::new(1);
    let (ring, write_end) = reader_polling(&kernel);
    assert_eq!(ring.wait(Some(Duration::ZERO)).unwrap(), Wait::Timeout);
    assert_eq!(
        ring.wait(Some(Duration::from_millis(20))).unwrap(),
        Wait::Timeout
    );
    // Records already there: ready without polling, even though the fd
    // would not wake (the wakeup watermark is not reached). A poll would
    // sit out the whole minute.
    kernel.publish(&record(1, 16));
    let start = Instant::now();
    assert_eq!(
        ring.wait(Some(Duration::from_secs(60))).unwrap(),
        Wait::Ready
    );
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "waited {:?} with a record available",
        start.elapsed()
    );
    // Hung up with records left: they are still to be read.
    drop(write_end);
    assert_eq!(ring.wait(None).unwrap(), Wait::Ready);
    let mut ring = ring;
    assert!(ring.next_record().is_some());
    assert!(ring.next_record().is_none());
    // Hung up and drained.
    assert_eq!(ring.wait(None).unwrap(), Wait::HungUp);
}

#[test]
fn records_that_arrive_with_the_hang_up_come_first() {
    // The task writes its last records and exits while the reader polls:
    // the reader must see the records (Ready), not the hang-up.
    let kernel = Kernel::new(1);
    let (ring, write_end) = reader_polling(&kernel);
    let last = record(2, 24);
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            kernel.publish(&last);
            drop(write_end);
        });
        assert_eq!(
            ring.wait(Some(Duration::from_secs(60))).unwrap(),
            Wait::Ready
        );
    });
}
