//! Joins the parts of a batch decoded on several threads into one struct array, column by
//! column on as many threads of rayon's pool: each column's parts are copied once, side by
//! side, where one `concat` of the whole struct would copy them all on the calling thread.

use arrow_array::{Array, ArrayRef, StructArray};
use rayon::prelude::*;

/// Joins `parts` (struct arrays of one type, no top-level nulls) in order, on up to
/// `threads` threads.
pub(crate) fn join_parts(parts: &[StructArray], threads: usize) -> StructArray {
    let first = parts.first().expect("at least one part");
    let columns = first.num_columns();
    if columns == 0 {
        let len = parts.iter().map(Array::len).sum();
        return StructArray::new_empty_fields(len, None);
    }
    let arrays: Vec<ArrayRef> = (0..columns)
        .into_par_iter()
        // At most `threads` runs of columns, one per thread.
        .with_min_len(columns.div_ceil(threads.max(1)))
        .map(|i| {
            let pieces: Vec<&dyn Array> = parts.iter().map(|p| p.column(i).as_ref()).collect();
            arrow_select::concat::concat(&pieces).expect("the parts have one type")
        })
        .collect();
    StructArray::try_new(first.fields().clone(), arrays, None)
        .expect("joined columns have the parts' types and one length")
}
