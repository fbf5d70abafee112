//! A string or binary column under construction: arrow-rs's byte builder, with values copied
//! by the engine's short copy instead of a `memcpy` call each (most are a few bytes long).

use std::marker::PhantomData;

use arrow_array::types::{BinaryType, ByteArrayType, Utf8Type};
use arrow_array::GenericByteArray;
use arrow_buffer::{Buffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer};

/// A utf8 column (its values are checked UTF-8: the decoder checked them).
pub(super) type StrCol = BytesCol<Utf8Type>;
/// A binary column.
pub(super) type BinCol = BytesCol<BinaryType>;

pub(super) struct BytesCol<T: ByteArrayType<Offset = i32>> {
    /// The end of each value so far, after a leading 0.
    offsets: Vec<i32>,
    values: Vec<u8>,
    nulls: NullBufferBuilder,
    kind: PhantomData<T>,
}

impl<T: ByteArrayType<Offset = i32>> BytesCol<T> {
    /// A column with room for `items` values of `bytes` bytes in all.
    pub(super) fn with_capacity(items: usize, bytes: usize) -> Self {
        let mut offsets = Vec::with_capacity(items + 1);
        offsets.push(0);
        Self {
            offsets,
            values: Vec::with_capacity(bytes),
            nulls: NullBufferBuilder::new(items),
            kind: PhantomData,
        }
    }

    pub(super) fn new() -> Self {
        Self::with_capacity(1024, 1024)
    }

    /// Appends a value. Panics, as arrow-rs's builder does, past 2 GiB of values.
    #[inline]
    pub(super) fn append_value(&mut self, value: impl AsRef<T::Native>) {
        let v: &[u8] = value.as_ref().as_ref();
        self.values.reserve(v.len());
        let len = self.values.len();
        // SAFETY: `v.len()` bytes were reserved after `len`, and `v` is not in `values`.
        unsafe {
            optimus_core::copy_short(v, self.values.as_mut_ptr().add(len));
            self.values.set_len(len + v.len());
        }
        self.offsets.push(self.end());
        self.nulls.append_non_null();
    }

    #[inline]
    pub(super) fn append_null(&mut self) {
        self.offsets.push(self.end());
        self.nulls.append_null();
    }

    /// The end of the values so far as an offset.
    #[inline]
    fn end(&self) -> i32 {
        i32::try_from(self.values.len()).expect("a column's values fit in 2 GiB")
    }

    /// The array of the values so far; the column starts again empty.
    pub(super) fn finish(&mut self) -> GenericByteArray<T> {
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        let values = std::mem::take(&mut self.values);
        // SAFETY: the offsets start at 0 and never decrease, the last is the values' length;
        // string values are UTF-8, checked by the decoder (or a name of the schema).
        unsafe {
            GenericByteArray::new_unchecked(
                OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)),
                Buffer::from_vec(values),
                self.nulls.finish(),
            )
        }
    }
}
