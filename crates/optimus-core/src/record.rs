//! Arena records: a message as bytes laid out by its type's op table, in an [`Arena`] that
//! owns the whole message tree. The engine's only `unsafe` memory access lives here.
//!
//! A record is [`Table::size`] zeroed bytes: presence words, the unknown-field sequence and
//! one slot per field at its entry's offset — natural-width scalars, 16-byte string/bytes
//! views, 8-byte sub-record pointers and 16-byte sequences (repeated fields and maps). Views
//! point into the decoded input (borrowed for the arena's lifetime) or into the arena.
//! Resetting the arena reuses its memory, so decoding message after message into a reset
//! arena allocates nothing once the arena has grown to the largest message.
//!
//! Soundness rests on two invariants: every [`RecPtr`] points at a zeroed-then-written record
//! of exactly its table's size, in an arena that outlives it; and every entry's slot lies
//! inside its record at an offset aligned to its width ([`optimus_schema::table`] builds it
//! so, and `layout_is_sound` below checks every table of the test schemas).

use std::marker::PhantomData;
use std::ptr::NonNull;

use bumpalo::Bump;
use optimus_schema::{MessageType, Table};

/// The memory a message tree lives in: records, sequences and copied strings.
///
/// Reset it (`reset`) to reuse its memory for the next message.
#[derive(Default)]
pub struct Arena {
    bump: Bump,
}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena")
            .field("allocated_bytes", &self.allocated_bytes())
            .finish()
    }
}

/// Alignment of every arena allocation (records hold 8-byte values at aligned offsets).
const ALIGN: usize = 8;

impl Arena {
    /// An empty arena; it grows in chunks as messages need.
    pub fn new() -> Arena {
        Arena::default()
    }

    /// Drops every record in the arena, keeping its largest chunk for the next message.
    pub fn reset(&mut self) {
        self.bump.reset();
    }

    /// Bytes the arena holds from the system (its chunks).
    pub fn allocated_bytes(&self) -> usize {
        self.bump.allocated_bytes()
    }

    /// `size` zeroed bytes, 8-aligned.
    #[inline]
    pub(crate) fn alloc_zeroed(&self, size: usize) -> NonNull<u8> {
        let layout = std::alloc::Layout::from_size_align(size.max(1), ALIGN)
            .expect("record sizes are far below isize::MAX");
        let p = self.bump.alloc_layout(layout);
        // SAFETY: `p` is a fresh allocation of `layout.size()` bytes.
        unsafe { p.as_ptr().write_bytes(0, layout.size()) };
        p
    }

    /// `len` zeroed bytes in the arena, writable by the caller.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(crate) fn alloc_zeroed_slice(&self, len: usize) -> &mut [u8] {
        self.bump.alloc_slice_fill_copy(len, 0u8)
    }

    /// A copy of `bytes` in the arena.
    #[inline]
    pub(crate) fn alloc_copy(&self, bytes: &[u8]) -> View {
        let copy = self.bump.alloc_slice_copy(bytes);
        View {
            ptr: copy.as_ptr(),
            len: copy.len(),
        }
    }
}

/// A string or bytes value in a record: a pointer and a length, into the input or the arena.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub(crate) struct View {
    ptr: *const u8,
    len: usize,
}

const _: () = assert!(std::mem::size_of::<View>() == optimus_schema::table::VIEW_BYTES as usize);

impl View {
    /// Number of bytes viewed.
    #[inline]
    pub(crate) fn len(self) -> usize {
        self.len
    }

    /// A view of `bytes`, which must stay alive as long as the record holding the view.
    #[inline]
    pub(crate) fn of(bytes: &[u8]) -> View {
        View {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
        }
    }

    /// The bytes viewed.
    ///
    /// # Safety
    /// The view was made by [`View::of`] or [`Arena::alloc_copy`] from memory that lives for
    /// `'a`, or is zeroed (empty).
    #[inline]
    pub(crate) unsafe fn bytes<'a>(self) -> &'a [u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: the caller's duty: `ptr..ptr+len` is live, initialized memory for `'a`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// A sequence in a record: values of one width in an arena array.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub(crate) struct Seq {
    ptr: *mut u8,
    len: u32,
    cap: u32,
}

const _: () = assert!(std::mem::size_of::<Seq>() == optimus_schema::table::SEQUENCE_BYTES as usize);

impl Seq {
    /// Number of values.
    #[inline]
    pub(crate) fn len(self) -> usize {
        self.len as usize
    }

    /// The values, `width` bytes each, as raw bytes.
    ///
    /// # Safety
    /// The sequence holds `width`-byte values (as its entry says) in memory that lives for
    /// `'a`.
    #[inline]
    pub(crate) unsafe fn raw<'a>(self, width: usize) -> &'a [u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: the caller's duty; `len * width` bytes were written by `push`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len as usize * width) }
    }
}

/// A pointer to a record of one table's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct RecPtr(NonNull<u8>);

impl RecPtr {
    /// A new zeroed record of `table`'s size in `arena`.
    #[inline]
    pub(crate) fn new(arena: &Arena, table: &Table) -> RecPtr {
        RecPtr(arena.alloc_zeroed(table.size as usize))
    }

    /// Whether presence bit `index` is set.
    ///
    /// # Safety
    /// `index` is an entry index of this record's table.
    #[inline(always)]
    pub(crate) unsafe fn has(self, index: usize) -> bool {
        // SAFETY: word `index / 64` lies in the presence words, as the caller ensures.
        let word = unsafe { self.0.as_ptr().cast::<u64>().add(index / 64).read() };
        word & (1 << (index % 64)) != 0
    }

    /// Sets or clears presence bit `index`.
    ///
    /// # Safety
    /// As [`RecPtr::has`].
    #[inline(always)]
    pub(crate) unsafe fn set_bit(self, index: usize, on: bool) {
        // SAFETY: as in `has`; the record is writable arena memory.
        unsafe {
            let w = self.0.as_ptr().cast::<u64>().add(index / 64);
            let bit = 1u64 << (index % 64);
            w.write(if on { w.read() | bit } else { w.read() & !bit });
        }
    }

    /// Presence word `word`.
    ///
    /// # Safety
    /// `word` is below the table's `presence_words`.
    #[inline(always)]
    pub(crate) unsafe fn presence_word(self, word: usize) -> u64 {
        // SAFETY: the caller's duty.
        unsafe { self.0.as_ptr().cast::<u64>().add(word).read() }
    }

    /// Clears the bits of `mask` in presence word `word`.
    ///
    /// # Safety
    /// As [`RecPtr::presence_word`].
    #[inline]
    pub(crate) unsafe fn clear_bits(self, word: usize, mask: u64) {
        // SAFETY: the caller's duty.
        unsafe {
            let w = self.0.as_ptr().cast::<u64>().add(word);
            w.write(w.read() & !mask);
        }
    }

    /// The value of type `T` at `offset`.
    ///
    /// # Safety
    /// `offset` is the offset of an entry of this record's table whose slot holds a `T`
    /// (its width is `size_of::<T>()`, so the read is in bounds and aligned).
    #[inline(always)]
    pub(crate) unsafe fn read<T: Copy>(self, offset: u32) -> T {
        // SAFETY: the caller's duty; records are 8-aligned and slots aligned to their width.
        unsafe { self.0.as_ptr().add(offset as usize).cast::<T>().read() }
    }

    /// Writes `value` at `offset`.
    ///
    /// # Safety
    /// As [`RecPtr::read`].
    #[inline(always)]
    pub(crate) unsafe fn write<T: Copy>(self, offset: u32, value: T) {
        // SAFETY: as in `read`.
        unsafe {
            self.0
                .as_ptr()
                .add(offset as usize)
                .cast::<T>()
                .write(value)
        }
    }

    /// Appends `width` bytes from `value` to the sequence at `offset`, growing it in the
    /// arena (doubling) when full.
    ///
    /// # Safety
    /// `offset` holds a sequence of `width`-byte values in this record, which lives in
    /// `arena`; `value` has at least `width` bytes.
    #[inline]
    pub(crate) unsafe fn push(self, arena: &Arena, offset: u32, width: usize, value: &[u8]) {
        debug_assert!(value.len() >= width);
        // SAFETY: the caller's duty: a sequence lives at `offset`.
        let mut seq: Seq = unsafe { self.read(offset) };
        if seq.len == seq.cap {
            // SAFETY: `seq` lives in `arena`, holding `width`-byte values.
            seq = unsafe { grow(arena, seq, width, 1) };
        }
        // SAFETY: `len < cap`, so the slot lies in the array; `value` has `width` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                value.as_ptr(),
                seq.ptr.add(seq.len as usize * width),
                width,
            );
        }
        seq.len += 1;
        // SAFETY: as above.
        unsafe { self.write(offset, seq) };
    }

    /// Appends `bytes` to the sequence of single bytes at `offset`.
    ///
    /// # Safety
    /// `offset` holds a sequence of 1-byte values in this record, which lives in `arena`.
    #[inline]
    pub(crate) unsafe fn extend_bytes(self, arena: &Arena, offset: u32, bytes: &[u8]) {
        // SAFETY: the caller's duty.
        unsafe {
            self.reserve(arena, offset, 1, bytes.len());
            let mut seq: Seq = self.read(offset);
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                seq.ptr.add(seq.len as usize),
                bytes.len(),
            );
            seq.len += bytes.len() as u32;
            self.write(offset, seq);
        }
    }

    /// Makes room for `more` values in the sequence at `offset`.
    ///
    /// # Safety
    /// As [`RecPtr::push`].
    #[inline]
    pub(crate) unsafe fn reserve(self, arena: &Arena, offset: u32, width: usize, more: usize) {
        // SAFETY: the caller's duty.
        let seq: Seq = unsafe { self.read(offset) };
        if (seq.cap - seq.len) as usize >= more {
            return;
        }
        // SAFETY: as above.
        unsafe { self.write(offset, grow(arena, seq, width, more)) };
    }

    /// The raw pointer stored in a sub-message slot.
    #[inline(always)]
    pub(crate) fn from_slot(p: *mut u8) -> Option<RecPtr> {
        NonNull::new(p).map(RecPtr)
    }

    /// The pointer to store in a sub-message slot.
    #[inline(always)]
    pub(crate) fn as_slot(self) -> *mut u8 {
        self.0.as_ptr()
    }
}

/// A copy of `seq` with room for `more` more values (at least double its capacity).
///
/// # Safety
/// `seq` holds `width`-byte values in `arena`.
#[cold]
#[inline(never)]
unsafe fn grow(arena: &Arena, seq: Seq, width: usize, more: usize) -> Seq {
    let want = (seq.len as usize).saturating_add(more);
    let cap = want.max(seq.cap as usize * 2).max(4);
    let cap = u32::try_from(cap).expect("sequence lengths are bounded by the decode budget");
    let bytes = (cap as usize)
        .checked_mul(width)
        .expect("sequence bytes are bounded by the decode budget");
    let fresh = arena.alloc_zeroed(bytes).as_ptr();
    if seq.len > 0 {
        // SAFETY: the old array holds `len * width` initialized bytes; the new one is larger.
        unsafe { std::ptr::copy_nonoverlapping(seq.ptr, fresh, seq.len as usize * width) };
    }
    Seq {
        ptr: fresh,
        len: seq.len,
        cap,
    }
}

/// Reads a `T` out of the first `size_of::<T>()` bytes of `bytes`.
#[inline(always)]
pub(crate) fn read_le<T: Copy>(bytes: &[u8]) -> T {
    assert!(bytes.len() >= std::mem::size_of::<T>());
    // SAFETY: the assertion above: `bytes` has room for a `T`; the read is unaligned.
    unsafe { bytes.as_ptr().cast::<T>().read_unaligned() }
}

/// The bytes of a `T`.
#[inline(always)]
pub(crate) fn bytes_of<T: Copy>(value: &T) -> &[u8] {
    // SAFETY: any `T: Copy` used here (integers, floats, views, pointers) has no padding, so
    // its `size_of` bytes are initialized.
    unsafe {
        std::slice::from_raw_parts((value as *const T).cast::<u8>(), std::mem::size_of::<T>())
    }
}

/// A handle that ties a record to the arena (and input) it lives in.
pub(crate) type Life<'a> = PhantomData<&'a Arena>;

/// Checks that every entry's slot lies in its record, aligned to its width, apart from the
/// presence words and the unknown-field sequence: what the `unsafe` reads above rely on.
#[cfg(test)]
pub(crate) fn layout_is_sound(table: &Table) -> bool {
    use optimus_schema::Entry;
    let header = table.presence_words * 8;
    let in_bounds = |e: &Entry| {
        let w = e.op.slot_width();
        e.offset >= header + optimus_schema::table::SEQUENCE_BYTES
            && e.offset + w <= table.size
            && e.offset.is_multiple_of(w.min(8))
    };
    table.size.is_multiple_of(8)
        && table.unknown_offset == header
        && table.unknown_offset + optimus_schema::table::SEQUENCE_BYTES <= table.size
        && table.entries.iter().all(in_bounds)
}

/// The message type that entry `e` of `table` names: read through the address its set
/// resolved ([`Table::sub_type_address`]), one load where its id went through the aux list and
/// the set's type list.
#[inline(always)]
pub(crate) fn sub_type<'t>(table: &'t Table, e: &optimus_schema::Entry) -> &'t MessageType {
    let addr = table.sub_type_address(e);
    // SAFETY: the address is that of a type in the type list of the set that holds `table` (a
    // copy of a table outside its set has none, and `sub_type_address` panics); that list is
    // final once the set is built and lives as long as the set, so as long as `'t`.
    unsafe { &*(addr as *const MessageType) }
}

/// Copies `src` to `dst`: up to 32 bytes as two overlapping loads and stores of the widest
/// width that fits (no call: most strings and bytes in messages are short), longer ones with
/// `memcpy`. Public for code that copies field values elsewhere (the Arrow columns of the
/// Python binding).
///
/// # Safety
/// `dst` is valid for `src.len()` bytes of writes and does not overlap `src`.
#[inline(always)]
pub unsafe fn copy_short(src: &[u8], dst: *mut u8) {
    let n = src.len();
    let s = src.as_ptr();
    // SAFETY: every arm reads inside `src` (the second load of a pair ends at its end, the
    // first starts at its start) and writes the same offsets of `dst`, valid for `n` bytes.
    unsafe {
        macro_rules! pair {
            ($t:ty) => {{
                let w = std::mem::size_of::<$t>();
                let head = s.cast::<$t>().read_unaligned();
                let tail = s.add(n - w).cast::<$t>().read_unaligned();
                dst.cast::<$t>().write_unaligned(head);
                dst.add(n - w).cast::<$t>().write_unaligned(tail);
            }};
        }
        match n {
            0 => {}
            1..=3 => {
                *dst = *s;
                *dst.add(n / 2) = *s.add(n / 2);
                *dst.add(n - 1) = *s.add(n - 1);
            }
            4..=7 => pair!(u32),
            8..=15 => pair!(u64),
            16..=32 => pair!(u128),
            _ => std::ptr::copy_nonoverlapping(s, dst, n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use optimus_schema::SchemaSet;

    #[test]
    fn sequences_grow_and_keep_their_values() {
        let s =
            SchemaSet::from_source("syntax = \"proto3\"; message M { repeated fixed64 v = 1; }")
                .unwrap();
        let t = &s.message(s.message_by_name("M").unwrap()).table;
        assert!(layout_is_sound(t));
        let arena = Arena::new();
        let r = RecPtr::new(&arena, t);
        let off = t.entries[0].offset;
        for i in 0..1000u64 {
            // SAFETY: entry 0 is a sequence of 8-byte values in this record.
            unsafe { r.push(&arena, off, 8, &i.to_le_bytes()) };
        }
        // SAFETY: as above.
        let seq: Seq = unsafe { r.read(off) };
        assert_eq!(seq.len(), 1000);
        // SAFETY: as above.
        let raw = unsafe { seq.raw(8) };
        for (i, chunk) in raw.chunks(8).enumerate() {
            assert_eq!(read_le::<u64>(chunk), i as u64);
        }
        // SAFETY: as above.
        unsafe { r.reserve(&arena, off, 8, 5000) };
        // SAFETY: as above.
        let seq: Seq = unsafe { r.read(off) };
        // SAFETY: as above.
        let tenth = read_le::<u64>(unsafe { &seq.raw(8)[72..] });
        assert_eq!((seq.len(), tenth), (1000, 9));
        assert!(seq.cap >= 6000);
    }

    #[test]
    fn presence_bits_past_the_first_word() {
        let fields: String = (1..=130).map(|n| format!("int32 f{n} = {n}; ")).collect();
        let s = SchemaSet::from_source(&format!("syntax = \"proto3\"; message W {{ {fields} }}"))
            .unwrap();
        let t = &s.message(s.message_by_name("W").unwrap()).table;
        assert!(layout_is_sound(t));
        let mut arena = Arena::new();
        for _ in 0..3 {
            let r = RecPtr::new(&arena, t);
            // SAFETY: indices below 130 are entries of `t`.
            unsafe {
                for i in [0, 63, 64, 129] {
                    assert!(!r.has(i));
                    r.set_bit(i, true);
                }
                assert!(r.has(64) && !r.has(65));
                r.set_bit(64, false);
                assert!(!r.has(64) && r.has(129));
                assert_eq!(r.presence_word(0), 1 | 1 << 63);
            }
            arena.reset();
        }
    }

    #[test]
    fn views_borrow_or_copy() {
        let arena = Arena::new();
        let input = b"hello".to_vec();
        let borrowed = View::of(&input);
        let copied = arena.alloc_copy(&input);
        // SAFETY: `input` and `arena` are alive.
        unsafe {
            assert_eq!(borrowed.bytes(), b"hello");
            assert_eq!(copied.bytes(), b"hello");
            assert_ne!(copied.bytes().as_ptr(), input.as_ptr());
            assert_eq!(View::of(&[]).bytes(), b"");
        }
    }
}
