//! optimus-rpc: a Dagger-style RPC stack on commodity machines.
//!
//! Dagger offloads the whole RPC stack to a NIC that applications reach only through
//! shared-memory rings the NIC polls. Here the NIC is a thread on its own core — the *soft NIC*
//! ([`Nic`]) — that owns the transport, the connection tables and load balancing. Application
//! threads write requests into rings ([`RpcClient`], [`AsyncClient`]) and serve requests from
//! rings ([`Worker`]); they never touch a socket. Another process on the host attaches through a
//! shared-memory file ([`ShmRegion`]).
//!
//! ```text
//!  app thread ─tx ring─►┐                         ┌─► transport (UDP / TCP / loopback)
//!  app thread ◄─rx ring─┤  soft NIC: poll_once()  ├─► inline handler (connection 0)
//!  worker     ◄─rx ring─┤  control→RX burst→TX    │
//!  worker     ─tx ring─►┘                         └─◄ transport
//! ```
//!
//! Payloads are opaque bytes at this level; services and methods come from `.proto` `service`
//! blocks ([`MethodTable`]), the method id being the method's index in its service. A
//! [`TypedService`] gives handlers (and callers) engine messages instead: it decodes requests
//! and encodes replies with `optimus-core` for the schema's input and output types.
//!
//! Modules: [`frame`] (header and checksum), [`ring`] (SPSC rings), [`shm`] (the region),
//! [`nic`] (the poll loop), [`client`], [`worker`], [`typed`] (engine-message handlers),
//! [`kernels`] (compute units: compression, encryption and checksums on fields),
//! [`offload`] (DT on the NIC core: records, field placement, co-serialization),
//! [`transport`] (loopback, lossy, UDP, TCP).
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]
// `is_multiple_of` is newer than the workspace's rust-version.
#![allow(clippy::manual_is_multiple_of)]

pub mod client;
pub mod frame;
pub mod kernels;
pub mod methods;
pub mod nic;
pub mod offload;
pub mod ring;
pub mod shm;
pub mod transport;
pub mod typed;
pub mod worker;

use std::sync::Arc;
use std::time::Duration;

pub use client::{AsyncClient, CallFuture, CallId, ClientOptions, RpcClient};
pub use frame::{FrameHeader, FrameKind, Status};
pub use kernels::{FieldKernels, Kernel, KernelError, Side};
pub use methods::MethodTable;
pub use nic::{
    Balance, Handler, Nic, NicConfig, NicHandle, NicStats, NicThread, PollMode, LOCAL_CONN,
    RX_BATCH, TX_BATCH,
};
pub use offload::{HandBack, Placement, RecordService};
pub use shm::{RegionAccess, RegionLayout, ShmRegion};
pub use transport::{
    loopback::LoopbackNet,
    lossy::LossConfig,
    seal::Psk,
    tcp::Tcp,
    tls::{TlsClient, TlsServer},
    udp::{Udp, UdpStats},
    NoTransport, Transport,
};
pub use typed::{Failure, TypedService};
pub use worker::Worker;

/// Everything that can go wrong in optimus-rpc.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RpcError {
    /// Fewer bytes than a header or than the header's payload length.
    #[error("truncated frame: need {needed} bytes, got {got}")]
    Truncated {
        /// Bytes the frame needs.
        needed: usize,
        /// Bytes present.
        got: usize,
    },
    /// Bytes after the end of a frame (datagram transports carry exactly one frame).
    #[error("{extra} bytes after the end of the frame")]
    TrailingBytes {
        /// Extra bytes.
        extra: usize,
    },
    /// A header field has a value this version does not accept.
    #[error("malformed frame: bad {0}")]
    Malformed(&'static str),
    /// A payload over the limit.
    #[error("payload of {len} bytes exceeds the limit of {max}")]
    TooLarge {
        /// Payload length.
        len: usize,
        /// Limit.
        max: usize,
    },
    /// Header and payload do not match the checksum.
    #[error("checksum mismatch")]
    BadChecksum,
    /// A ring's producer wrote something that is not a frame; the ring was skipped forward.
    #[error("corrupt ring: {0}")]
    CorruptRing(&'static str),
    /// A shared-memory file that is not a region of this version.
    #[error("not an optimus-rpc region: bad {0}")]
    BadRegion(&'static str),
    /// A region file whose owner or mode lets in more than the opener asked for.
    #[error("region {path}: refused: {why}")]
    RegionAccess {
        /// The file.
        path: String,
        /// What is wrong with it (owner, group or mode, found and expected).
        why: String,
    },
    /// Every queue pair of the region is taken.
    #[error("no free queue pair in the region")]
    NoFreeQp,
    /// A ring or call table is full; poll completions and retry.
    #[error("rings are full (backpressure)")]
    Backpressure,
    /// No outcome within the deadline (after every retry).
    #[error("call timed out")]
    Timeout,
    /// The connection is closed, or the server restarted and no longer knows it.
    #[error("connection closed")]
    Disconnected,
    /// The server answered with an error status.
    #[error("server returned {status:?}{}", if detail.is_empty() { String::new() } else { format!(": {detail}") })]
    Status {
        /// The status.
        status: Status,
        /// The message the handler returned, if any.
        detail: String,
    },
    /// A typed call's response is not a message of the method's output type.
    #[error("bad message: {0}")]
    BadMessage(String),
    /// A bad setting.
    #[error("configuration: {0}")]
    Config(String),
    /// An operating-system error.
    #[error("{0}")]
    Io(Arc<std::io::Error>),
}

impl From<std::io::Error> for RpcError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(Arc::new(e))
    }
}

/// How a polling loop waits when it found no work: spin, then yield, then sleep.
///
/// Busy polling gives the lowest latency on a dedicated core; on a shared machine (tests,
/// laptops) the backoff keeps idle pollers from starving everyone else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdlePolicy {
    /// Empty polls spent spinning before yielding.
    pub spins: u32,
    /// Further empty polls that yield the CPU before sleeping.
    pub yields: u32,
    /// Sleep per empty poll after that (zero: never sleep).
    pub sleep: Duration,
}

impl IdlePolicy {
    /// Never yield or sleep: for a pinned, dedicated core.
    pub const BUSY: Self = Self {
        spins: u32::MAX,
        yields: 0,
        sleep: Duration::ZERO,
    };

    /// Waits as the policy says after `empty` consecutive empty polls.
    #[inline]
    pub fn wait(&self, empty: u32) {
        if empty <= self.spins {
            std::hint::spin_loop();
        } else if empty <= self.spins.saturating_add(self.yields) || self.sleep.is_zero() {
            std::thread::yield_now();
        } else {
            std::thread::sleep(self.sleep);
        }
    }
}

impl Default for IdlePolicy {
    fn default() -> Self {
        Self {
            spins: 256,
            yields: 256,
            sleep: Duration::from_micros(50),
        }
    }
}

/// Pins the calling thread to CPU `core`.
///
/// # Errors
/// The core does not exist or the call is not permitted.
pub fn pin_current_thread(core: usize) -> Result<(), RpcError> {
    if core >= libc::CPU_SETSIZE as usize {
        return Err(RpcError::Config(format!("core {core} out of range")));
    }
    // SAFETY: an all-zero `cpu_set_t` is the empty set; CPU_SET writes inside it (index checked
    // above); sched_setaffinity reads `size_of::<cpu_set_t>()` bytes from a live value.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error().into());
        }
    }
    Ok(())
}

/// CPU time the calling thread has used so far (`CLOCK_THREAD_CPUTIME_ID`), in nanoseconds:
/// what a core spent on a thread's work, not the wall time that passed.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live, writable timespec; the clock id is a constant the kernel knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

#[cfg(test)]
mod cpu_time_tests {
    #[test]
    fn thread_cpu_time_grows_with_work_and_not_with_sleep() {
        let t0 = super::thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let t1 = super::thread_cpu_ns();
        assert!(t1 > t0, "work takes CPU time ({x})");
        std::thread::sleep(std::time::Duration::from_millis(50));
        let t2 = super::thread_cpu_ns();
        assert!(
            t2 - t1 < 40_000_000,
            "a 50 ms sleep is not CPU time: {}",
            t2 - t1
        );
    }
}
