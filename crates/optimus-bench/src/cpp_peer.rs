//! Google protobuf C++ as a peer of `optimus bench`: the embedded workloads' generated C++
//! messages (`cpp/peer.cc`, built by build.rs where libprotobuf is installed) behind a small C
//! interface. The only foreign code the CLI calls; every call goes through [`CppMessage`] or
//! the free functions here, which keep the pointers and lengths they pass valid.

use std::ffi::{c_char, c_int, c_void};
use std::ptr::NonNull;

use anyhow::{bail, Result};

mod ffi {
    use super::{c_char, c_int, c_void};

    extern "C" {
        pub fn optimus_cpp_new(which: c_int) -> *mut c_void;
        pub fn optimus_cpp_delete(m: *mut c_void);
        pub fn optimus_cpp_parse(m: *mut c_void, data: *const u8, len: usize) -> c_int;
        pub fn optimus_cpp_serialize(m: *const c_void, out: *mut u8, cap: usize) -> usize;
        pub fn optimus_cpp_serialize_to(m: *const c_void, out: *mut u8, cap: usize) -> usize;
        pub fn optimus_cpp_arena_new() -> *mut c_void;
        pub fn optimus_cpp_arena_delete(a: *mut c_void);
        pub fn optimus_cpp_parse_on_arena(
            a: *mut c_void,
            which: c_int,
            data: *const u8,
            len: usize,
        ) -> c_int;
        pub fn optimus_cpp_to_json(m: *const c_void, out: *mut c_char, cap: usize) -> usize;
        pub fn optimus_cpp_from_json_new(which: c_int, text: *const c_char, len: usize) -> c_int;
        pub fn optimus_cpp_protobuf_to_json(which: c_int, data: *const u8, len: usize) -> c_int;
    }
}

/// The C++ peer's index of an embedded workload's type.
pub fn which(type_name: &str) -> Option<c_int> {
    match type_name {
        "bench.Flat" => Some(0),
        "bench.Mixed" => Some(1),
        "bench.Nested" => Some(2),
        _ => None,
    }
}

/// One C++ message, owned.
pub struct CppMessage {
    ptr: NonNull<c_void>,
}

impl CppMessage {
    /// An empty message of the type `which` names.
    pub fn new(which: c_int) -> Result<CppMessage> {
        // SAFETY: `optimus_cpp_new` takes any integer and returns null or a new message.
        let ptr = unsafe { ffi::optimus_cpp_new(which) };
        match NonNull::new(ptr) {
            Some(ptr) => Ok(CppMessage { ptr }),
            None => bail!("the C++ peer has no message type {which}"),
        }
    }

    /// Parses `data` into this message (cleared first, its allocations kept).
    pub fn parse(&mut self, data: &[u8]) -> Result<()> {
        // SAFETY: `ptr` is a live message this value owns; `data` is valid for its length.
        let ok = unsafe { ffi::optimus_cpp_parse(self.ptr.as_ptr(), data.as_ptr(), data.len()) };
        if ok == 0 {
            bail!("Google protobuf C++ does not parse the workload");
        }
        Ok(())
    }

    /// Serializes the message into a new buffer, returning its length (the buffer is dropped).
    pub fn serialize_len(&self) -> usize {
        // SAFETY: `ptr` is a live message; a null `out` with no room asks only for the size.
        unsafe { ffi::optimus_cpp_serialize(self.ptr.as_ptr(), std::ptr::null_mut(), 0) }
    }

    /// Serializes the message into `out` (its fastest form: no string), returning the length;
    /// `out` must have room for it.
    pub fn serialize_into(&self, out: &mut [u8]) -> Result<usize> {
        // SAFETY: `ptr` is a live message; `out` is writable for `out.len()` bytes, and the
        // callee writes only when the encoding fits in them.
        let n = unsafe {
            ffi::optimus_cpp_serialize_to(self.ptr.as_ptr(), out.as_mut_ptr(), out.len())
        };
        if n > out.len() {
            bail!("the C++ peer's encoding outgrew its buffer");
        }
        Ok(n)
    }

    /// The message's serialized bytes.
    pub fn serialize(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.serialize_len()];
        // SAFETY: `ptr` is a live message; `out` is writable for `out.len()` bytes, and the
        // callee writes only when the encoding fits in them.
        let n =
            unsafe { ffi::optimus_cpp_serialize(self.ptr.as_ptr(), out.as_mut_ptr(), out.len()) };
        out.truncate(n);
        out
    }

    /// Writes the message as proto3 JSON into a new string, returning its length.
    pub fn to_json_len(&self) -> Result<usize> {
        // SAFETY: as `serialize_len`.
        let n = unsafe { ffi::optimus_cpp_to_json(self.ptr.as_ptr(), std::ptr::null_mut(), 0) };
        if n == usize::MAX {
            bail!("Google protobuf C++ cannot write the workload as JSON");
        }
        Ok(n)
    }

    /// The message as proto3 JSON.
    pub fn to_json(&self) -> Result<String> {
        let mut out = vec![0u8; self.to_json_len()?];
        // SAFETY: as `serialize`, for `out.len()` bytes of text.
        let n = unsafe {
            ffi::optimus_cpp_to_json(self.ptr.as_ptr(), out.as_mut_ptr().cast(), out.len())
        };
        out.truncate(n);
        Ok(String::from_utf8(out)?)
    }
}

impl Drop for CppMessage {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `optimus_cpp_new`, is owned by this value and freed once.
        unsafe { ffi::optimus_cpp_delete(self.ptr.as_ptr()) }
    }
}

/// A Google protobuf C++ `Arena`, owned, reset before each message parsed on it.
pub struct CppArena {
    ptr: NonNull<c_void>,
}

impl CppArena {
    /// A new arena.
    pub fn new() -> Result<CppArena> {
        // SAFETY: `optimus_cpp_arena_new` takes nothing and returns a new arena.
        match NonNull::new(unsafe { ffi::optimus_cpp_arena_new() }) {
            Some(ptr) => Ok(CppArena { ptr }),
            None => bail!("the C++ peer could not make an arena"),
        }
    }

    /// Resets the arena and parses `data` into a new message of type `which` on it.
    pub fn parse(&mut self, which: c_int, data: &[u8]) -> Result<()> {
        // SAFETY: `ptr` is a live arena this value owns; `data` is valid for its length.
        let ok = unsafe {
            ffi::optimus_cpp_parse_on_arena(self.ptr.as_ptr(), which, data.as_ptr(), data.len())
        };
        if ok == 0 {
            bail!("Google protobuf C++ does not parse the workload");
        }
        Ok(())
    }
}

impl Drop for CppArena {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `optimus_cpp_arena_new`, is owned by this value and freed
        // once.
        unsafe { ffi::optimus_cpp_arena_delete(self.ptr.as_ptr()) }
    }
}

/// Reads proto3 JSON into a new message of type `which`, then drops it.
pub fn from_json_new(which: c_int, text: &str) -> Result<()> {
    // SAFETY: `text` is valid for its length in bytes.
    if unsafe { ffi::optimus_cpp_from_json_new(which, text.as_ptr().cast(), text.len()) } == 0 {
        bail!("Google protobuf C++ does not read the workload's JSON");
    }
    Ok(())
}

/// Parses `data` into a new message of type `which` and writes it as JSON, dropping both.
pub fn protobuf_to_json(which: c_int, data: &[u8]) -> Result<()> {
    // SAFETY: `data` is valid for its length.
    if unsafe { ffi::optimus_cpp_protobuf_to_json(which, data.as_ptr(), data.len()) } == 0 {
        bail!("Google protobuf C++ does not transcode the workload");
    }
    Ok(())
}
