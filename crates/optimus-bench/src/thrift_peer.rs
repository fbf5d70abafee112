//! Apache Thrift C++ as a peer of `optimus bench`: the embedded workloads' structs as `thrift
//! --gen cpp:templates` generates them, over `TBinaryProtocolT<TMemoryBuffer>` and
//! `TCompactProtocolT<TMemoryBuffer>` (`cpp/thrift_peer.cc`, built by build.rs where the Thrift
//! compiler and libthrift are installed), behind a small C interface. Every call goes through
//! [`ThriftPeer`], which keeps the pointers and lengths it passes valid.

use std::ffi::{c_int, c_void};
use std::ptr::NonNull;

use anyhow::{bail, Result};
use optimus_core::thrift::Protocol;

mod ffi {
    use super::{c_int, c_void};

    extern "C" {
        pub fn optimus_thrift_new(which: c_int) -> *mut c_void;
        pub fn optimus_thrift_delete(p: *mut c_void);
        pub fn optimus_thrift_read(
            p: *mut c_void,
            protocol: c_int,
            data: *const u8,
            len: usize,
        ) -> c_int;
        pub fn optimus_thrift_write(p: *mut c_void, protocol: c_int, out: *mut *const u8) -> usize;
        pub fn optimus_thrift_transcode(
            p: *mut c_void,
            from: c_int,
            to: c_int,
            data: *const u8,
            len: usize,
            out: *mut *const u8,
        ) -> usize;
    }
}

/// The peer's index of an embedded workload's struct (`peers.Flat` ...).
pub fn which(workload: &str) -> Option<c_int> {
    match workload {
        "flat" => Some(0),
        "mixed" => Some(1),
        "nested" => Some(2),
        _ => None,
    }
}

fn code(p: Protocol) -> c_int {
    match p {
        Protocol::Binary => 0,
        Protocol::Compact => 1,
    }
}

/// One generated struct, reused for every read, with its reused input and output
/// `TMemoryBuffer`s, owned.
pub struct ThriftPeer {
    ptr: NonNull<c_void>,
}

impl ThriftPeer {
    /// A peer for the struct `which` names.
    pub fn new(which: c_int) -> Result<ThriftPeer> {
        // SAFETY: `optimus_thrift_new` takes any integer and returns null or a new peer.
        match NonNull::new(unsafe { ffi::optimus_thrift_new(which) }) {
            Some(ptr) => Ok(ThriftPeer { ptr }),
            None => bail!("the Thrift C++ peer has no struct {which}"),
        }
    }

    /// Reads `data` in `protocol` into the reused struct (the bytes copied into the reused
    /// input buffer first).
    pub fn read(&mut self, protocol: Protocol, data: &[u8]) -> Result<()> {
        // SAFETY: `ptr` is a live peer this value owns; `data` is valid for its length.
        let ok = unsafe {
            ffi::optimus_thrift_read(self.ptr.as_ptr(), code(protocol), data.as_ptr(), data.len())
        };
        if ok == 0 {
            bail!("Apache Thrift C++ does not read the workload");
        }
        Ok(())
    }

    /// Writes the struct in `protocol` into the reused output buffer: its bytes, valid until
    /// the next call.
    pub fn write(&mut self, protocol: Protocol) -> Result<&[u8]> {
        let mut out = std::ptr::null();
        // SAFETY: `ptr` is a live peer; `out` is a valid place for the callee's pointer.
        let n = unsafe { ffi::optimus_thrift_write(self.ptr.as_ptr(), code(protocol), &mut out) };
        self.bytes(n, out)
    }

    /// Reads `data` in `from` into the reused struct and writes it in `to`: the bytes, as
    /// [`ThriftPeer::write`].
    pub fn transcode(&mut self, from: Protocol, to: Protocol, data: &[u8]) -> Result<&[u8]> {
        let mut out = std::ptr::null();
        // SAFETY: as `read` and `write`.
        let n = unsafe {
            ffi::optimus_thrift_transcode(
                self.ptr.as_ptr(),
                code(from),
                code(to),
                data.as_ptr(),
                data.len(),
                &mut out,
            )
        };
        self.bytes(n, out)
    }

    fn bytes(&self, n: usize, out: *const u8) -> Result<&[u8]> {
        if n == usize::MAX || out.is_null() {
            bail!("Apache Thrift C++ does not transcode or write the workload");
        }
        // SAFETY: the callee returned `n` bytes at `out` in the peer's output buffer, which
        // lives, unchanged, until the next call on the peer (which needs `&mut self`).
        Ok(unsafe { std::slice::from_raw_parts(out, n) })
    }
}

impl Drop for ThriftPeer {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `optimus_thrift_new`, is owned by this value and freed once.
        unsafe { ffi::optimus_thrift_delete(self.ptr.as_ptr()) }
    }
}
