//! Independent model runs on several threads: each run is deterministic, so running them
//! at once changes when they finish, not what they report.

use std::sync::{Mutex, PoisonError};

/// The machine's cores, or 1 where it cannot say: how many runs [`map_ordered`] callers
/// start at once by default.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// `f` of every item, on up to `threads` threads (at least one), each taking the next item
/// not yet taken so that long runs spread out; the results in the items' order.
///
/// # Panics
/// Where `f` panics, as it would on this thread.
pub fn map_ordered<T: Send, R: Send>(
    items: Vec<T>,
    threads: usize,
    f: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let threads = threads.clamp(1, items.len().max(1));
    let queue = Mutex::new(items.into_iter().enumerate());
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        // Taken out of the lock before `f` runs.
                        let next = queue.lock().unwrap_or_else(PoisonError::into_inner).next();
                        let Some((i, item)) = next else { break mine };
                        mine.push((i, f(item)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    done.sort_by_key(|d| d.0);
    done.into_iter().map(|d| d.1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_the_items_order_for_any_thread_count() {
        let items: Vec<u64> = (0..100).collect();
        // Uneven work, so that threads finish out of order.
        let work = |k: u64| (0..(k % 7) * 10_000).fold(k, |a, b| a.wrapping_mul(31) ^ b);
        let one = map_ordered(items.clone(), 1, work);
        for threads in [2, 3, 16, 1000] {
            assert_eq!(
                map_ordered(items.clone(), threads, work),
                one,
                "{threads} threads"
            );
        }
        assert!(map_ordered(Vec::new(), 4, work).is_empty());
        assert_eq!(map_ordered(vec![5u64], 0, |k| k + 1), [6]);
    }
}
