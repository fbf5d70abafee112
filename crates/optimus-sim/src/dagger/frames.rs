//! The request stream: optimus-rpc's frames (a 32-byte header, then the payload, in whole
//! cache lines) sent by the client threads, paced at an offered load or all at once.
//!
//! optimus-rpc records no frame trace, so the stream is generated from the frame layout its
//! `frame.rs` fixes: `HEADER_BYTES` = 32 and `CACHE_LINE` = 64 (a frame occupies
//! `ceil((32 + payload) / 64)` ring lines). The constants are mirrored here, not imported: the
//! simulator never depends on the NIC's crate (DESIGN.md). Dagger's "64B RPC" is one such
//! frame with a 32-byte payload: one cache line, one CCI-P line.

/// optimus-rpc `frame::HEADER_BYTES`.
pub const HEADER_BYTES: usize = 32;
/// optimus-rpc `frame::CACHE_LINE`: one ring slot, one CCI-P line.
pub const CACHE_LINE: usize = 64;
/// Payload of Dagger's 64-byte echo RPC in an optimus-rpc frame (header + payload = 64 B).
pub const ECHO_64B_PAYLOAD: usize = CACHE_LINE - HEADER_BYTES;

/// Ring lines of a frame carrying `payload` bytes (optimus-rpc `frame::lines_for`).
pub const fn lines_for(payload: usize) -> usize {
    (HEADER_BYTES + payload).div_ceil(CACHE_LINE)
}

/// One request frame of the stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Request {
    /// Client thread (and so connection and TX ring) that sends it.
    pub thread: usize,
    /// When the application hands it to the stack, ns.
    pub arrival_ns: f64,
    /// Ring lines of the request frame (the echo reply has as many).
    pub lines: usize,
}

/// `per_thread` requests from each of `threads` threads, interleaved thread by thread. With
/// `load_mrps` the threads share the load evenly, each sending at a fixed interval (a paced
/// open-loop generator, as an echo microbenchmark's client is); without it every request is
/// ready at 0 (saturation: the stack's own bottleneck sets the pace).
pub fn stream(
    threads: usize,
    per_thread: usize,
    payload: usize,
    load_mrps: Option<f64>,
) -> Vec<Request> {
    let lines = lines_for(payload);
    let interval_ns = load_mrps.map_or(0.0, |l| threads as f64 * 1e3 / l);
    let mut out = Vec::with_capacity(threads * per_thread);
    for k in 0..per_thread {
        for thread in 0..threads {
            // Threads start a fraction of an interval apart, so their requests interleave.
            let offset = interval_ns * thread as f64 / threads as f64;
            out.push(Request {
                thread,
                arrival_ns: k as f64 * interval_ns + offset,
                lines,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_64_byte_rpc_is_one_line() {
        assert_eq!(lines_for(ECHO_64B_PAYLOAD), 1);
        assert_eq!(lines_for(ECHO_64B_PAYLOAD + 1), 2);
        assert_eq!(lines_for(0), 1);
    }

    #[test]
    fn paced_stream_offers_the_load() {
        let s = stream(2, 100, 32, Some(4.0));
        assert_eq!(s.len(), 200);
        let last = s.iter().map(|r| r.arrival_ns).fold(0.0, f64::max);
        // 200 requests at 4 per µs take 50 µs (less one interval).
        assert!((last - 49.75e3).abs() < 1.0, "{last}");
        assert!(stream(1, 3, 32, None).iter().all(|r| r.arrival_ns == 0.0));
    }
}
