//! The shared-memory region between applications and the soft NIC.
//!
//! One region holds a header, a doorbell word, a control sequence, a heartbeat, and
//! [`MAX_QPS`] at most queue pairs (QPs). A QP is two rings: `tx` (application → NIC) and `rx`
//! (NIC → application, the completion queue). A QP is claimed by one application thread as a
//! *client* (it sends requests, receives responses) or a *worker* (it receives requests, sends
//! responses) by a compare-and-swap on its state word, and handed back by setting it to
//! `DETACHING`; the NIC then resets the rings and marks it `FREE`.
//!
//! The region is anonymous shared memory for one process, or a file in `/dev/shm` (or a memfd,
//! reachable as `/proc/PID/fd/N`) that another process maps with [`ShmRegion::open`]. The
//! creator writes the header into a temporary file and renames it into place, so an opener
//! never sees a half-written header.
//!
//! Access: whoever can map a region reads every request and reply in its rings, so a region is
//! created mode 0600 (set with `fchmod`, whatever the umask) and is the creator's alone;
//! [`RegionAccess::Group`] shares it with one group (mode 0660, `fchown` to the group). An
//! opener checks the file before mapping it and refuses one that is looser than it asked for or
//! owned by someone else ([`RpcError::RegionAccess`]): a region another user planted could
//! otherwise be read by that user.
//!
//! ```text
//!  0     header (magic, version, n_qps, ring_lines, epoch)
//!  64    doorbell   (bit i: QP i has new tx frames; doorbell mode)
//!  128   control    (bumped when a QP changes state)
//!  192   heartbeat  (the NIC bumps it while it runs)
//!  256   QP descriptors, one line each: state, role, owner pid
//!  ...   per QP: tx indices (2 lines), tx lines, rx indices (2 lines), rx lines
//! ```

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use crate::frame::CACHE_LINE;
use crate::ring::{self, Consumer, Producer, RingIndices};
use crate::RpcError;

/// Most queue pairs in one region (one doorbell bit each).
pub const MAX_QPS: usize = 64;
/// Region magic: "OPTRPC" + format number.
const REGION_MAGIC: u64 = 0x0001_4350_5254_504F;
const REGION_VERSION: u32 = 1;

const OFF_DOORBELL: usize = 64;
const OFF_CONTROL: usize = 128;
const OFF_MODE: usize = 136;
const OFF_HEARTBEAT: usize = 192;
const OFF_QP_DESC: usize = 256;

/// Mode bit: the NIC polls only QPs whose doorbell bit is set (plus a periodic sweep).
pub const MODE_DOORBELL: u64 = 1;

/// QP state: nobody uses it.
pub const QP_FREE: u32 = 0;
/// QP state: an application thread sends requests on it.
pub const QP_CLIENT: u32 = 1;
/// QP state: an application thread serves requests from it.
pub const QP_WORKER: u32 = 2;
/// QP state: its owner left; the NIC will reset and free it.
pub const QP_DETACHING: u32 = 3;
/// QP state: the NIC found its rings corrupt (a hostile or broken peer) and stopped serving
/// it; its client's calls fail `Disconnected`. It stays taken until its owner detaches or
/// dies, then the NIC resets and frees it.
pub const QP_QUARANTINED: u32 = 4;

#[repr(C, align(64))]
struct RegionHeader {
    magic: u64,
    version: u32,
    n_qps: u32,
    ring_lines: u32,
    _reserved: u32,
    region_bytes: u64,
    epoch: u64,
    _pad: [u8; 24],
}

#[repr(C, align(64))]
struct QpDesc {
    state: AtomicU32,
    owner_pid: AtomicU32,
    _pad: [u8; CACHE_LINE - 8],
}

const _: () = {
    assert!(core::mem::size_of::<RegionHeader>() == CACHE_LINE);
    assert!(core::mem::size_of::<QpDesc>() == CACHE_LINE);
    assert!(OFF_QP_DESC % CACHE_LINE == 0 && OFF_HEARTBEAT + CACHE_LINE == OFF_QP_DESC);
};

/// Shape of a region: how many QPs, how many lines per ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionLayout {
    /// Queue pairs (1..=[`MAX_QPS`]).
    pub n_qps: usize,
    /// Lines per ring (power of two, ≥ 4).
    pub ring_lines: usize,
}

impl RegionLayout {
    fn validate(&self) -> Result<(), RpcError> {
        if self.n_qps == 0 || self.n_qps > MAX_QPS {
            return Err(RpcError::Config(format!(
                "n_qps must be 1..={MAX_QPS}, got {}",
                self.n_qps
            )));
        }
        if !self.ring_lines.is_power_of_two() || self.ring_lines < 4 || self.ring_lines > (1 << 24)
        {
            return Err(RpcError::Config(format!(
                "ring_lines must be a power of two in 4..=2^24, got {}",
                self.ring_lines
            )));
        }
        Ok(())
    }

    /// Bytes of one ring: its indices (two lines: `tail`, then `head`), then its lines.
    pub fn ring_bytes(&self) -> usize {
        core::mem::size_of::<RingIndices>() + self.ring_lines * CACHE_LINE
    }

    fn rings_start(&self) -> usize {
        OFF_QP_DESC + self.n_qps * CACHE_LINE
    }

    fn qp_offset(&self, qp: usize) -> usize {
        self.rings_start() + qp * 2 * self.ring_bytes()
    }

    /// Total bytes of a region with this layout.
    pub fn region_bytes(&self) -> usize {
        self.rings_start() + self.n_qps * 2 * self.ring_bytes()
    }
}

/// Who may map a region file besides its creator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RegionAccess {
    /// The creating user only: mode 0600.
    #[default]
    Owner,
    /// The creating user and the members of group `gid`: mode 0660, group set to `gid`.
    Group {
        /// The group that may attach.
        gid: u32,
    },
}

/// Mode of a region file under `RegionAccess::Owner`.
pub const REGION_MODE_OWNER: u32 = 0o600;
/// Mode of a region file under `RegionAccess::Group`.
pub const REGION_MODE_GROUP: u32 = 0o660;

impl RegionAccess {
    /// The file mode a region with this access gets.
    pub fn mode(&self) -> u32 {
        match self {
            Self::Owner => REGION_MODE_OWNER,
            Self::Group { .. } => REGION_MODE_GROUP,
        }
    }

    /// Sets `fd`'s mode (and group) explicitly, so the umask cannot loosen or narrow it.
    fn apply(&self, fd: &OwnedFd) -> Result<(), RpcError> {
        if let Self::Group { gid } = *self {
            // SAFETY: `fd` is a valid descriptor; uid -1 leaves the owner as it is.
            if unsafe { libc::fchown(fd.as_raw_fd(), u32::MAX, gid) } != 0 {
                return Err(last_os_error("fchown region to its group"));
            }
        }
        // SAFETY: `fd` is a valid descriptor; the mode is a plain value.
        if unsafe { libc::fchmod(fd.as_raw_fd(), self.mode() as libc::mode_t) } != 0 {
            return Err(last_os_error("fchmod region"));
        }
        Ok(())
    }

    /// Refuses a file that is not a regular file, is owned by another user (`Owner`), belongs
    /// to another group (`Group`), or grants more than this access would.
    fn check(&self, path: &Path, meta: &std::fs::Metadata) -> Result<(), RpcError> {
        let refuse = |why: String| RpcError::RegionAccess {
            path: path.display().to_string(),
            why,
        };
        if !meta.file_type().is_file() {
            return Err(refuse("not a regular file".into()));
        }
        let mode = meta.mode() & 0o7777;
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let loose = mode & !self.mode();
        if loose != 0 {
            return Err(refuse(format!(
                "mode {mode:04o} grants more than {:04o} (bits {loose:04o})",
                self.mode()
            )));
        }
        match *self {
            Self::Owner if meta.uid() != me => Err(refuse(format!(
                "owned by uid {}, not by this user (uid {me})",
                meta.uid()
            ))),
            Self::Group { gid } if meta.gid() != gid => Err(refuse(format!(
                "group is gid {}, expected gid {gid}",
                meta.gid()
            ))),
            _ => Ok(()),
        }
    }
}

/// A mapped region (anonymous, `/dev/shm` file or memfd).
pub struct ShmRegion {
    base: NonNull<u8>,
    len: usize,
    layout: RegionLayout,
    /// Path to unlink on drop (the creator of a `/dev/shm` file).
    unlink: Option<PathBuf>,
    /// Path another process opens to attach, if any.
    path: Option<PathBuf>,
    _fd: Option<OwnedFd>,
}

// SAFETY: the mapping stays valid for the value's life; shared state in it is only reached
// through atomics and the ring protocol, which are safe to use from any thread.
unsafe impl Send for ShmRegion {}
// SAFETY: as above.
unsafe impl Sync for ShmRegion {}

impl Drop for ShmRegion {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` describe a mapping made by `map` and unmapped only here.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
        if let Some(p) = &self.unlink {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn last_os_error(what: &str) -> RpcError {
    let e = std::io::Error::last_os_error();
    std::io::Error::new(e.kind(), format!("{what}: {e}")).into()
}

fn map(fd: Option<&OwnedFd>, len: usize) -> Result<NonNull<u8>, RpcError> {
    let (flags, raw) = match fd {
        Some(fd) => (libc::MAP_SHARED, fd.as_raw_fd()),
        None => (libc::MAP_SHARED | libc::MAP_ANONYMOUS, -1),
    };
    // SAFETY: a fresh mapping at an address the kernel picks; arguments are plain values.
    let p = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            raw,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(last_os_error("mmap"));
    }
    NonNull::new(p.cast()).ok_or_else(|| RpcError::Config("mmap returned null".into()))
}

impl ShmRegion {
    /// A region private to this process (threads only).
    ///
    /// # Errors
    /// A bad layout or a failed `mmap`.
    pub fn anonymous(layout: RegionLayout) -> Result<Arc<Self>, RpcError> {
        layout.validate()?;
        let len = layout.region_bytes();
        let base = map(None, len)?;
        let r = Self {
            base,
            len,
            layout,
            unlink: None,
            path: None,
            _fd: None,
        };
        r.init_header();
        Ok(Arc::new(r))
    }

    /// A region in a new file at `path` (normally under `/dev/shm`), mode 0600, removed when
    /// dropped.
    ///
    /// # Errors
    /// The file exists or cannot be created, or `mmap` fails.
    pub fn create(path: &Path, layout: RegionLayout) -> Result<Arc<Self>, RpcError> {
        Self::create_with(path, layout, RegionAccess::Owner)
    }

    /// Like [`create`](Self::create), with the file's access chosen by `access`.
    ///
    /// # Errors
    /// As [`create`](Self::create); also when the group cannot be set (the creator is not a
    /// member of it and not privileged).
    pub fn create_with(
        path: &Path,
        layout: RegionLayout,
        access: RegionAccess,
    ) -> Result<Arc<Self>, RpcError> {
        layout.validate()?;
        let len = layout.region_bytes();
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        // Created 0600 from the first instant (O_EXCL: never an existing file or a symlink),
        // so nobody else can open it before `apply` sets the final mode.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(REGION_MODE_OWNER)
            .open(&tmp)?;
        let fd = OwnedFd::from(file);
        if let Err(e) = access.apply(&fd) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        let file = std::fs::File::from(fd);
        if let Err(e) = file.set_len(len as u64) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e.into());
        }
        let fd = OwnedFd::from(file);
        let base = map(Some(&fd), len)?;
        let mut r = Self {
            base,
            len,
            layout,
            unlink: Some(tmp.clone()),
            path: None,
            _fd: Some(fd),
        };
        r.init_header();
        std::fs::rename(&tmp, path)?;
        r.unlink = Some(path.to_path_buf());
        r.path = Some(path.to_path_buf());
        Ok(Arc::new(r))
    }

    /// A region in an anonymous memory file (memfd); other processes reach it through
    /// [`path`](Self::path), `/proc/PID/fd/N`, while this one keeps it open.
    ///
    /// # Errors
    /// `memfd_create`, `ftruncate` or `mmap` fails.
    pub fn memfd(name: &str, layout: RegionLayout) -> Result<Arc<Self>, RpcError> {
        layout.validate()?;
        let len = layout.region_bytes();
        let cname =
            CString::new(name).map_err(|_| RpcError::Config("memfd name has a NUL".into()))?;
        // SAFETY: `cname` is a valid C string; flags are plain values.
        let raw = unsafe { libc::memfd_create(cname.as_ptr(), 0) };
        if raw < 0 {
            return Err(last_os_error("memfd_create"));
        }
        // SAFETY: `raw` is a new descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // A memfd starts 0777; /proc/PID/fd already needs ptrace rights, but keep the mode
        // honest for an opener's check.
        RegionAccess::Owner.apply(&fd)?;
        // SAFETY: `fd` is a valid descriptor.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(last_os_error("ftruncate"));
        }
        let base = map(Some(&fd), len)?;
        let path = PathBuf::from(format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            fd.as_raw_fd()
        ));
        let r = Self {
            base,
            len,
            layout,
            unlink: None,
            path: Some(path),
            _fd: Some(fd),
        };
        r.init_header();
        Ok(Arc::new(r))
    }

    /// Maps an existing region created by another process of this user (mode 0600).
    ///
    /// # Errors
    /// The file is missing, too short, or its header is not a region of this version;
    /// [`RpcError::RegionAccess`] when it is owned by another user or other users may open it.
    pub fn open(path: &Path) -> Result<Arc<Self>, RpcError> {
        Self::open_with(path, RegionAccess::Owner)
    }

    /// Maps an existing region whose file must match `access`: a `Group` region may be owned
    /// by another user but must belong to that group and grant nothing to others.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_with(path: &Path, access: RegionAccess) -> Result<Arc<Self>, RpcError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)?;
        // Checked on the open descriptor, so the file cannot be swapped after the check.
        let meta = file.metadata()?;
        access.check(path, &meta)?;
        let flen = meta.len() as usize;
        if flen < OFF_QP_DESC {
            return Err(RpcError::BadRegion("file shorter than a region header"));
        }
        let fd = OwnedFd::from(file);
        let base = map(Some(&fd), flen)?;
        let mut r = Self {
            base,
            len: flen,
            layout: RegionLayout {
                n_qps: 1,
                ring_lines: 4,
            },
            unlink: None,
            path: Some(path.to_path_buf()),
            _fd: Some(fd),
        };
        let h = r.header();
        if h.magic != REGION_MAGIC {
            return Err(RpcError::BadRegion("magic"));
        }
        if h.version != REGION_VERSION {
            return Err(RpcError::BadRegion("version"));
        }
        let layout = RegionLayout {
            n_qps: h.n_qps as usize,
            ring_lines: h.ring_lines as usize,
        };
        layout
            .validate()
            .map_err(|_| RpcError::BadRegion("layout"))?;
        if layout.region_bytes() != h.region_bytes as usize || layout.region_bytes() > flen {
            return Err(RpcError::BadRegion("size"));
        }
        r.layout = layout;
        Ok(Arc::new(r))
    }

    fn init_header(&self) {
        let h = RegionHeader {
            magic: REGION_MAGIC,
            version: REGION_VERSION,
            n_qps: self.layout.n_qps as u32,
            ring_lines: self.layout.ring_lines as u32,
            _reserved: 0,
            region_bytes: self.layout.region_bytes() as u64,
            epoch: 0,
            _pad: [0; 24],
        };
        // SAFETY: the mapping is at least `OFF_QP_DESC` bytes, page aligned, and nobody else has
        // it yet (anonymous, or a file not yet renamed into place).
        unsafe { self.base.as_ptr().cast::<RegionHeader>().write(h) };
    }

    fn header(&self) -> &RegionHeader {
        // SAFETY: the mapping starts with a `RegionHeader` (checked length ≥ `OFF_QP_DESC`),
        // page aligned; its fields are written once before the region is shared.
        unsafe { &*self.base.as_ptr().cast::<RegionHeader>() }
    }

    fn atomic_u64(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off + 8 <= OFF_QP_DESC && off & 7 == 0);
        // SAFETY: `off` is one of the fixed, 8-aligned offsets inside the header lines.
        unsafe { &*self.base.as_ptr().add(off).cast::<AtomicU64>() }
    }

    fn desc(&self, qp: usize) -> &QpDesc {
        assert!(qp < self.layout.n_qps, "qp {qp} out of range");
        // SAFETY: `qp < n_qps`, so the descriptor line lies inside the mapping; it is aligned and
        // holds only atomics.
        unsafe {
            &*self
                .base
                .as_ptr()
                .add(OFF_QP_DESC + qp * CACHE_LINE)
                .cast::<QpDesc>()
        }
    }

    /// The layout.
    pub fn layout(&self) -> RegionLayout {
        self.layout
    }

    /// Path another process passes to [`open`](Self::open), if the region has one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The doorbell word (bit i: QP i has new frames).
    pub fn doorbell(&self) -> &AtomicU64 {
        self.atomic_u64(OFF_DOORBELL)
    }

    /// Bumped whenever a QP changes state.
    pub fn control_seq(&self) -> &AtomicU64 {
        self.atomic_u64(OFF_CONTROL)
    }

    /// Mode bits the NIC advertises to attaching applications (`MODE_*`).
    pub fn mode(&self) -> &AtomicU64 {
        self.atomic_u64(OFF_MODE)
    }

    /// Bumped by the NIC while it runs.
    pub fn heartbeat(&self) -> &AtomicU64 {
        self.atomic_u64(OFF_HEARTBEAT)
    }

    /// State of QP `qp` (`QP_*`).
    pub fn qp_state(&self, qp: usize) -> u32 {
        self.desc(qp).state.load(Ordering::Acquire)
    }

    /// Pid of the process that claimed QP `qp`.
    pub fn qp_owner(&self, qp: usize) -> u32 {
        self.desc(qp).owner_pid.load(Ordering::Acquire)
    }

    /// Claims a free QP for `role` (`QP_CLIENT` or `QP_WORKER`); returns its index.
    ///
    /// # Errors
    /// [`RpcError::NoFreeQp`] when every QP is taken.
    pub fn claim(&self, role: u32) -> Result<usize, RpcError> {
        for qp in 0..self.layout.n_qps {
            if self.claim_at(qp, role) {
                return Ok(qp);
            }
        }
        Err(RpcError::NoFreeQp)
    }

    /// Claims QP `qp` if it is free.
    pub fn claim_at(&self, qp: usize, role: u32) -> bool {
        let d = self.desc(qp);
        if d.state
            .compare_exchange(QP_FREE, role, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            d.owner_pid.store(std::process::id(), Ordering::Release);
            self.control_seq().fetch_add(1, Ordering::AcqRel);
            true
        } else {
            false
        }
    }

    /// Hands QP `qp` back; the NIC resets it and marks it free.
    pub fn detach(&self, qp: usize) {
        self.desc(qp).state.store(QP_DETACHING, Ordering::Release);
        self.control_seq().fetch_add(1, Ordering::AcqRel);
    }

    /// Marks QP `qp` quarantined (the NIC stopped serving it), unless its owner already left.
    pub(crate) fn quarantine(&self, qp: usize) {
        let d = self.desc(qp);
        let st = d.state.load(Ordering::Acquire);
        if st == QP_CLIENT || st == QP_WORKER {
            let _ =
                d.state
                    .compare_exchange(st, QP_QUARANTINED, Ordering::AcqRel, Ordering::Relaxed);
        }
        self.control_seq().fetch_add(1, Ordering::AcqRel);
    }

    /// Resets QP `qp`'s ring indices to zero (the NIC does this after a detach, before `free`).
    pub(crate) fn reset_rings(&self, qp: usize) {
        self.indices(qp, false).reset();
        self.indices(qp, true).reset();
    }

    /// Marks QP `qp` free again (after `reset_rings` and after the NIC resynced its ends).
    pub(crate) fn free(&self, qp: usize) {
        let d = self.desc(qp);
        d.owner_pid.store(0, Ordering::Release);
        d.state.store(QP_FREE, Ordering::Release);
        self.control_seq().fetch_add(1, Ordering::AcqRel);
    }

    /// Bytes of QP `qp`'s rings: the tx ring ([`RegionLayout::ring_bytes`]), then the rx ring.
    pub fn qp_rings_bytes(&self) -> usize {
        2 * self.layout.ring_bytes()
    }

    /// Writes `bytes` into QP `qp`'s rings at `offset` (taken modulo the rings' size; see
    /// [`qp_rings_bytes`](Self::qp_rings_bytes)), as any process that maps the region could:
    /// indices, headers and payloads alike. For tests and fuzz targets of the NIC's defences
    /// against a hostile or broken peer; an application never needs it.
    ///
    /// # Panics
    /// If `qp` is out of range.
    #[doc(hidden)]
    pub fn scribble(&self, qp: usize, offset: usize, bytes: &[u8]) {
        let span = self.qp_rings_bytes();
        let base = self.ring_ptrs(qp, false).0.as_ptr().cast::<u8>();
        for (k, b) in bytes.iter().enumerate() {
            let off = (offset + k) % span;
            // SAFETY: `off < span`, and the QP's two rings are `span` contiguous bytes inside
            // the mapping (`ring_ptrs`). Plain bytes have no invalid values; the NIC reads this
            // memory only through copies it validates, as it must for a peer in another
            // process writing the same bytes at any time.
            unsafe { base.add(off).write_volatile(*b) };
        }
    }

    fn ring_ptrs(&self, qp: usize, rx: bool) -> (NonNull<RingIndices>, NonNull<u8>) {
        assert!(qp < self.layout.n_qps, "qp {qp} out of range");
        let off = self.layout.qp_offset(qp) + if rx { self.layout.ring_bytes() } else { 0 };
        debug_assert!(off + self.layout.ring_bytes() <= self.len);
        // SAFETY: `off` plus one ring lies inside the mapping (layout checked against the file
        // length in `open`, and equal to it for regions we created).
        unsafe {
            let idx = self.base.as_ptr().add(off);
            (
                NonNull::new_unchecked(idx.cast()),
                NonNull::new_unchecked(idx.add(core::mem::size_of::<RingIndices>())),
            )
        }
    }

    fn indices(&self, qp: usize, rx: bool) -> &RingIndices {
        // SAFETY: `ring_ptrs` returns an aligned pointer to a `RingIndices` inside the mapping.
        unsafe { self.ring_ptrs(qp, rx).0.as_ref() }
    }

    /// Both ends of QP `qp`'s tx (`rx == false`) or rx ring.
    ///
    /// # Safety
    /// At most one `Producer` and one `Consumer` of each ring may be *used*, in all processes:
    /// the owner of the QP uses the application ends, the NIC the others (the unused end of each
    /// returned pair is dropped unused).
    pub(crate) unsafe fn ring(self: &Arc<Self>, qp: usize, rx: bool) -> (Producer, Consumer) {
        let (idx, data) = self.ring_ptrs(qp, rx);
        let keep: Arc<dyn Send + Sync> = self.clone();
        // SAFETY: the pointers are in bounds, 64-aligned (region page aligned, every offset a
        // multiple of 64) and kept mapped by `keep`; uniqueness of the ends is the caller's duty.
        unsafe { ring::from_raw(idx, data, self.layout.ring_lines as u64, keep) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{FrameHeader, FrameKind};

    #[test]
    fn claim_detach_and_layout() {
        let r = ShmRegion::anonymous(RegionLayout {
            n_qps: 3,
            ring_lines: 16,
        })
        .unwrap();
        assert_eq!(r.claim(QP_CLIENT).unwrap(), 0);
        assert_eq!(r.claim(QP_WORKER).unwrap(), 1);
        assert_eq!(r.qp_state(1), QP_WORKER);
        assert_eq!(r.qp_owner(1), std::process::id());
        assert_eq!(r.claim(QP_CLIENT).unwrap(), 2);
        assert!(matches!(r.claim(QP_CLIENT), Err(RpcError::NoFreeQp)));
        r.detach(1);
        assert_eq!(r.qp_state(1), QP_DETACHING);
        r.reset_rings(1);
        r.free(1);
        assert_eq!(r.claim(QP_CLIENT).unwrap(), 1);
    }

    #[test]
    fn file_region_is_visible_through_a_second_mapping() {
        let path =
            std::env::temp_dir().join(format!("optimus-rpc-shm-test-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let a = ShmRegion::create(
            &path,
            RegionLayout {
                n_qps: 2,
                ring_lines: 8,
            },
        )
        .unwrap();
        let b = ShmRegion::open(&path).unwrap();
        assert_eq!(b.layout(), a.layout());
        // SAFETY: one producer (from `a`) and one consumer (from `b`) of QP 1's tx ring.
        let (mut p, _) = unsafe { a.ring(1, false) };
        // SAFETY: as above.
        let (_, mut c) = unsafe { b.ring(1, false) };
        p.push(&FrameHeader::new(FrameKind::Request), b"across")
            .unwrap();
        p.publish();
        let got = c.peek(1024).unwrap().unwrap();
        assert_eq!(got.payload, b"across");
        drop((p, c, a, b));
        assert!(!path.exists(), "creator removes the file");
    }

    fn layout2() -> RegionLayout {
        RegionLayout {
            n_qps: 2,
            ring_lines: 8,
        }
    }

    fn mode_of(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().mode() & 0o7777
    }

    #[test]
    fn created_regions_are_0600_whatever_the_umask() {
        let path = std::env::temp_dir().join(format!("optimus-rpc-mode-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        // SAFETY: umask only changes this process's creation mask; restored below.
        let old = unsafe { libc::umask(0) };
        let r = ShmRegion::create(&path, layout2());
        // SAFETY: as above.
        unsafe { libc::umask(old) };
        let r = r.unwrap();
        assert_eq!(mode_of(&path), 0o600);
        assert!(ShmRegion::open(&path).is_ok());
        drop(r);
        let m = ShmRegion::memfd("optimus-mode", layout2()).unwrap();
        let meta = std::fs::metadata(m.path().unwrap()).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o600);
    }

    #[test]
    fn group_regions_are_0660_and_open_checks_the_group() {
        let path = std::env::temp_dir().join(format!("optimus-rpc-group-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        // SAFETY: getegid has no preconditions.
        let gid = unsafe { libc::getegid() };
        let _r = ShmRegion::create_with(&path, layout2(), RegionAccess::Group { gid }).unwrap();
        assert_eq!(mode_of(&path), 0o660);
        assert_eq!(std::fs::metadata(&path).unwrap().gid(), gid);
        assert!(ShmRegion::open_with(&path, RegionAccess::Group { gid }).is_ok());
        // An owner-only opener refuses the looser file; a group opener the wrong group.
        let e = ShmRegion::open(&path)
            .err()
            .expect("0660 refused for owner-only");
        assert!(e.to_string().contains("mode 0660"), "{e}");
        let e = ShmRegion::open_with(&path, RegionAccess::Group { gid: gid + 1 })
            .err()
            .expect("wrong group refused");
        assert!(matches!(e, RpcError::RegionAccess { .. }), "{e}");
    }

    #[test]
    fn open_refuses_a_world_readable_region() {
        let path = std::env::temp_dir().join(format!("optimus-rpc-loose-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let _r = ShmRegion::create(&path, layout2()).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = ShmRegion::open(&path).err().expect("0644 refused");
        assert!(
            e.to_string().contains("mode 0644 grants more than 0600"),
            "{e}"
        );
        let gid = std::fs::metadata(&path).unwrap().gid();
        assert!(ShmRegion::open_with(&path, RegionAccess::Group { gid }).is_err());
    }

    /// uid and gid of `nobody` on Linux.
    const NOBODY: u32 = 65534;

    fn is_root() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    #[test]
    fn open_refuses_a_region_of_another_owner() {
        if !is_root() {
            eprintln!("skipped: changing a file's owner needs root");
            return;
        }
        let path = std::env::temp_dir().join(format!("optimus-rpc-owner-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let _r = ShmRegion::create(&path, layout2()).unwrap();
        std::os::unix::fs::chown(&path, Some(NOBODY), None).unwrap();
        let e = ShmRegion::open(&path).err().expect("foreign owner refused");
        assert!(e.to_string().contains("owned by uid 65534"), "{e}");
    }

    /// Opens `path` read-only in a child that dropped to `nobody`; returns the child's errno
    /// (0 if the open succeeded).
    fn open_as_nobody(path: &Path) -> i32 {
        use std::os::unix::ffi::OsStrExt;
        let c = CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: the child calls only async-signal-safe functions (setgroups, setgid, setuid,
        // open, _exit) on memory prepared before the fork; the parent waits for it.
        unsafe {
            let pid = libc::fork();
            assert!(pid >= 0, "fork failed");
            if pid == 0 {
                if libc::setgroups(0, core::ptr::null()) != 0
                    || libc::setgid(NOBODY) != 0
                    || libc::setuid(NOBODY) != 0
                {
                    libc::_exit(100);
                }
                let fd = libc::open(c.as_ptr(), libc::O_RDONLY);
                if fd >= 0 {
                    libc::_exit(0);
                }
                libc::_exit((*libc::__errno_location()).min(99));
            }
            let mut status = 0;
            assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
            assert!(libc::WIFEXITED(status), "child did not exit");
            let code = libc::WEXITSTATUS(status);
            assert_ne!(code, 100, "child could not drop to nobody");
            code
        }
    }

    #[test]
    fn another_user_cannot_open_a_region() {
        if !is_root() {
            eprintln!("skipped: dropping to another uid in a child needs root");
            return;
        }
        // /dev/shm is where servers put regions; fall back to the temp dir without it.
        let dir = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let path = dir.join(format!("optimus-rpc-nobody-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let r = ShmRegion::create(&path, layout2()).unwrap();
        // Control: the same child opens a file that is world-readable, so a refusal below is
        // the region's mode, not a child that cannot open anything.
        let open_file = dir.join(format!("optimus-rpc-nobody-ctl-{}", std::process::id()));
        std::fs::write(&open_file, b"x").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&open_file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(open_as_nobody(&open_file), 0, "control file must open");
        let _ = std::fs::remove_file(&open_file);
        assert_eq!(
            open_as_nobody(&path),
            libc::EACCES,
            "nobody opened the region"
        );
        drop(r);
    }

    #[test]
    fn open_rejects_garbage() {
        let path =
            std::env::temp_dir().join(format!("optimus-rpc-shm-garbage-{}", std::process::id()));
        std::fs::write(&path, vec![7u8; 4096]).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(
            ShmRegion::open(&path),
            Err(RpcError::BadRegion("magic"))
        ));
        std::fs::write(&path, vec![7u8; 10]).unwrap();
        assert!(matches!(
            ShmRegion::open(&path),
            Err(RpcError::BadRegion(_))
        ));
        let _ = std::fs::remove_file(&path);
    }
}
