//! The extension's allocator: mimalloc, which keeps freed memory for reuse for ten seconds
//! before it goes back to the kernel.
//!
//! A batch's column buffers are freed when pyarrow drops the batch and allocated again for
//! the next one. Memory handed back to the kernel in between is faulted in again, page by
//! page: with the system allocator that was a third of `decode_batch`'s time, and with
//! mimalloc's own delay (one second) a batch decoded after a second of other work (a Python
//! loop over the last batch's rows, another library's turn) paid it again. Ten seconds is
//! jemalloc's default decay. `MIMALLOC_PURGE_DELAY` in the environment (milliseconds; -1:
//! never) still decides where it is set.

use std::os::raw::{c_int, c_long};

/// Every allocation of the extension, the record batches' buffers among them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc.h's `mi_option_e` (the v3 sources libmimalloc-sys
/// builds), which the crate's bindings do not name.
const MI_OPTION_PURGE_DELAY: c_int = 15;

/// How long freed memory is kept before it is handed back, in milliseconds.
const PURGE_DELAY_MS: c_long = 10_000;

extern "C" {
    fn mi_option_set(option: c_int, value: c_long);
}

/// Sets the purge delay, unless the environment sets it.
pub(crate) fn configure() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: `mi_option_set` only stores the option's value, from any thread.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
}
