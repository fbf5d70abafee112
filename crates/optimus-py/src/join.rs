//! Joins the parts of a batch decoded on several threads into one struct array, column by
//! column on as many threads: each column's parts are copied once, side by side, where one
//! `concat` of the whole struct would copy them all on the calling thread.

use std::sync::atomic::{AtomicUsize, Ordering};

use arrow_array::{Array, ArrayRef, StructArray};

/// Joins `parts` (struct arrays of one type, no top-level nulls) in order, on up to
/// `threads` threads.
pub(crate) fn join_parts(parts: &[StructArray], threads: usize) -> StructArray {
    let first = parts.first().expect("at least one part");
    let columns = first.num_columns();
    if columns == 0 {
        let len = parts.iter().map(Array::len).sum();
        return StructArray::new_empty_fields(len, None);
    }
    let next = AtomicUsize::new(0);
    let join_column = |i: usize| -> ArrayRef {
        let pieces: Vec<&dyn Array> = parts.iter().map(|p| p.column(i).as_ref()).collect();
        arrow_select::concat::concat(&pieces).expect("the parts have one type")
    };
    // Each thread takes the next column not yet taken, so wide and narrow columns even out.
    let take_columns = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= columns {
                return done;
            }
            done.push((i, join_column(i)));
        }
    };
    let threads = threads.clamp(1, columns);
    let mut joined: Vec<(usize, ArrayRef)> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(take_columns)).collect();
        let mut all = take_columns();
        for h in helpers {
            all.extend(h.join().expect("a join thread panicked"));
        }
        all
    });
    joined.sort_unstable_by_key(|(i, _)| *i);
    let arrays: Vec<ArrayRef> = joined.into_iter().map(|(_, a)| a).collect();
    StructArray::try_new(first.fields().clone(), arrays, None)
        .expect("joined columns have the parts' types and one length")
}
