//! The threads a large batch is decoded and joined on: one per CPU the process may run on,
//! each kept on a CPU of its own.
//!
//! Left to the scheduler, a worker woken by another often starts on the waker's CPU and waits
//! there while the other CPU idles, until the kernel's load balancing moves it some
//! milliseconds later: a batch of 100,000 messages on two threads then took as long as on one
//! in about a third of the calls. A worker pinned to its own CPU runs as soon as it is woken.

use std::sync::atomic::{AtomicPtr, Ordering};

/// A pool and the process that built it.
struct PoolOf {
    pid: u32,
    pool: rayon::ThreadPool,
}

/// The pool of this process, built on first use, and again in a child made by `fork` (the
/// parent's workers do not exist there, and work handed to them would wait forever).
pub(crate) fn pool() -> &'static rayon::ThreadPool {
    // Never freed: a pool is built once per process (a parent's, left behind in a child, is
    // never touched again), so a reference to it lives as long as the process.
    static CURRENT: AtomicPtr<PoolOf> = AtomicPtr::new(std::ptr::null_mut());
    let pid = std::process::id();
    let seen = CURRENT.load(Ordering::Acquire);
    // SAFETY: a non-null pointer in CURRENT is a leaked box, never freed.
    if let Some(current) = unsafe { seen.as_ref() } {
        if current.pid == pid {
            return &current.pool;
        }
    }
    let fresh = Box::into_raw(Box::new(PoolOf { pid, pool: build() }));
    match CURRENT.compare_exchange(seen, fresh, Ordering::AcqRel, Ordering::Acquire) {
        // SAFETY: `fresh` is now CURRENT's: leaked, never freed.
        Ok(_) => unsafe { &(*fresh).pool },
        Err(winner) => {
            // Another thread of this process built one first: this one goes, its threads with it.
            // SAFETY: `fresh` was never shared.
            drop(unsafe { Box::from_raw(fresh) });
            // SAFETY: as above, for the winner's box (of this process: built after the fork).
            unsafe { &(*winner).pool }
        }
    }
}

/// A pool of one worker per allowed CPU, each pinned to its own.
fn build() -> rayon::ThreadPool {
    let cpus = allowed_cpus();
    let threads = cpus.as_ref().map_or_else(
        || std::thread::available_parallelism().map_or(1, usize::from),
        Vec::len,
    );
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("optimus-batch-{i}"))
        .start_handler(move |i| {
            if let Some(cpu) = cpus.as_ref().and_then(|c| c.get(i)) {
                pin_to(*cpu);
            }
        })
        .build()
        .expect("the batch pool's threads start")
}

/// The CPUs this process may run on, in order (`None` where they cannot be read).
#[cfg(target_os = "linux")]
fn allowed_cpus() -> Option<Vec<usize>> {
    // SAFETY: `set` is a plain bit set the call fills; its size is passed with it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect();
        (!cpus.is_empty()).then_some(cpus)
    }
}

#[cfg(not(target_os = "linux"))]
fn allowed_cpus() -> Option<Vec<usize>> {
    None
}

/// Keeps the calling thread on `cpu` (a failure leaves it where the scheduler puts it).
#[cfg(target_os = "linux")]
fn pin_to(cpu: usize) {
    // SAFETY: as above; 0 names the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[cfg(not(target_os = "linux"))]
fn pin_to(_cpu: usize) {}
