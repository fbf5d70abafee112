//! Compute units: RPC kernels run on message fields — compression (zstd, LZ4), authenticated
//! encryption (AES-256-GCM, ChaCha20-Poly1305) and checksums (CRC32C) — as RPCAcc's compute
//! units run them beside its serializer.
//!
//! A [`Kernel`] *seals* a field's bytes on the way out (compresses, encrypts, appends a
//! checksum) and *opens* them on the way in (verifies, decrypts, decompresses). A chain of
//! kernels seals in order and opens in reverse, so `[Zstd, AesGcm]` compresses then
//! encrypts, and its peer decrypts then decompresses. [`FieldKernels`] names the `bytes`
//! fields of a method's request and reply that carry chains; a [`TypedService`] runs them
//! wherever it runs — inline on the soft NIC's core ([`Nic::set_handler`]), so the
//! application core never spends a cycle on them, or on worker threads — and its
//! [`TypedService::call`] runs the caller's side.
//!
//! Opening never trusts its input: a bad tag, a corrupt frame, a wrong checksum or a
//! decompressed size past the limit is a [`KernelError`], which the service answers as a
//! failed call (the caller gets exactly one outcome, an error naming the field), never a
//! crash and never an allocation past the limit.
//!
//! [`TypedService`]: crate::TypedService
//! [`TypedService::call`]: crate::TypedService::call
//! [`Nic::set_handler`]: crate::Nic::set_handler

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng};
use aes_gcm::Aes256Gcm;
use chacha20poly1305::ChaCha20Poly1305;
use optimus_schema::{Cardinality, Kind, MessageId, SchemaSet};

use crate::RpcError;

/// Bytes of an AEAD nonce, written in front of the ciphertext.
const NONCE_BYTES: usize = 12;
/// Bytes of a CRC32C, written after the data.
const CRC_BYTES: usize = 4;

/// One RPC kernel. See the module docs.
#[derive(Clone)]
pub enum Kernel {
    /// zstd at `level` (1..=22; 3 is zstd's default).
    Zstd {
        /// Compression level.
        level: i32,
    },
    /// LZ4 block format, the uncompressed size in front (lz4_flex's size-prepended form).
    Lz4,
    /// AES-256-GCM under a 32-byte key: a random 96-bit nonce, then ciphertext and tag.
    AesGcm {
        /// The key.
        key: [u8; 32],
    },
    /// ChaCha20-Poly1305 under a 32-byte key: a random 96-bit nonce, then ciphertext and tag.
    ChaCha20Poly1305 {
        /// The key.
        key: [u8; 32],
    },
    /// CRC32C (Castagnoli) of the data, four bytes little-endian after it.
    Crc32c,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Keys are never printed.
        f.write_str(self.name())
    }
}

/// Why a kernel could not open (or seal) a field's bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kernel}: {why}")]
pub struct KernelError {
    /// The kernel's name (`zstd`, `aes-gcm`, ...).
    pub kernel: &'static str,
    /// What went wrong.
    pub why: String,
}

impl Kernel {
    /// The kernel's name as a field chain spells it: `zstd`, `lz4`, `aes-gcm`,
    /// `chacha20-poly1305`, `crc32c`.
    pub fn name(&self) -> &'static str {
        match self {
            Kernel::Zstd { .. } => "zstd",
            Kernel::Lz4 => "lz4",
            Kernel::AesGcm { .. } => "aes-gcm",
            Kernel::ChaCha20Poly1305 { .. } => "chacha20-poly1305",
            Kernel::Crc32c => "crc32c",
        }
    }

    fn fail(&self, why: impl Into<String>) -> KernelError {
        KernelError {
            kernel: self.name(),
            why: why.into(),
        }
    }

    /// Seals `data` for the wire: compressed, encrypted, or with its checksum after it.
    ///
    /// # Errors
    /// A compressor or cipher that refuses (not expected for in-range levels and keys).
    pub fn seal(&self, data: &[u8]) -> Result<Vec<u8>, KernelError> {
        match self {
            Kernel::Zstd { level } => {
                zstd::bulk::compress(data, *level).map_err(|e| self.fail(e.to_string()))
            }
            Kernel::Lz4 => Ok(lz4_flex::block::compress_prepend_size(data)),
            Kernel::AesGcm { key } => {
                let cipher = Aes256Gcm::new(key.into());
                let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
                let body = cipher
                    .encrypt(&nonce, data)
                    .map_err(|_| self.fail("encryption failed"))?;
                Ok([nonce.as_slice(), &body].concat())
            }
            Kernel::ChaCha20Poly1305 { key } => {
                let cipher = ChaCha20Poly1305::new(key.into());
                let nonce = ChaCha20Poly1305::generate_nonce(&mut OsRng);
                let body = cipher
                    .encrypt(&nonce, data)
                    .map_err(|_| self.fail("encryption failed"))?;
                Ok([nonce.as_slice(), &body].concat())
            }
            Kernel::Crc32c => {
                let mut out = Vec::with_capacity(data.len() + CRC_BYTES);
                out.extend_from_slice(data);
                out.extend_from_slice(&crc32c::crc32c(data).to_le_bytes());
                Ok(out)
            }
        }
    }

    /// Opens what [`Kernel::seal`] wrote: decompressed (at most `limit` bytes), decrypted
    /// and authenticated, or its checksum verified and removed.
    ///
    /// # Errors
    /// A corrupt or truncated frame, a failed authentication (wrong key, tampered bytes), a
    /// wrong checksum, or a decompressed size over `limit`.
    pub fn open(&self, data: &[u8], limit: usize) -> Result<Vec<u8>, KernelError> {
        match self {
            Kernel::Zstd { .. } => {
                match zstd::bulk::Decompressor::upper_bound(data) {
                    Some(n) if n > limit => {
                        return Err(self.fail(format!(
                            "decompresses to {n} bytes, over the limit of {limit}"
                        )))
                    }
                    _ => {}
                }
                zstd::bulk::decompress(data, limit).map_err(|e| self.fail(e.to_string()))
            }
            Kernel::Lz4 => {
                let (n, _) = lz4_flex::block::uncompressed_size(data)
                    .map_err(|e| self.fail(e.to_string()))?;
                if n > limit {
                    return Err(self.fail(format!(
                        "decompresses to {n} bytes, over the limit of {limit}"
                    )));
                }
                lz4_flex::block::decompress_size_prepended(data)
                    .map_err(|e| self.fail(e.to_string()))
            }
            Kernel::AesGcm { key } => {
                let (nonce, body) = self.split_nonce(data)?;
                Aes256Gcm::new(key.into())
                    .decrypt(nonce.into(), body)
                    .map_err(|_| self.fail("authentication failed (wrong key or tampered bytes)"))
            }
            Kernel::ChaCha20Poly1305 { key } => {
                let (nonce, body) = self.split_nonce(data)?;
                ChaCha20Poly1305::new(key.into())
                    .decrypt(nonce.into(), body)
                    .map_err(|_| self.fail("authentication failed (wrong key or tampered bytes)"))
            }
            Kernel::Crc32c => {
                if data.len() < CRC_BYTES {
                    return Err(self.fail(format!("{} bytes, shorter than a checksum", data.len())));
                }
                let (body, sum) = data.split_at(data.len() - CRC_BYTES);
                let want = u32::from_le_bytes(sum.try_into().expect("four bytes"));
                let got = crc32c::crc32c(body);
                if got != want {
                    return Err(self.fail(format!("checksum {got:08x}, expected {want:08x}")));
                }
                Ok(body.to_vec())
            }
        }
    }

    fn split_nonce<'d>(
        &self,
        data: &'d [u8],
    ) -> Result<(&'d [u8; NONCE_BYTES], &'d [u8]), KernelError> {
        if data.len() < NONCE_BYTES {
            return Err(self.fail(format!("{} bytes, shorter than a nonce", data.len())));
        }
        let (nonce, body) = data.split_at(NONCE_BYTES);
        Ok((nonce.try_into().expect("twelve bytes"), body))
    }
}

/// Seals `data` through `chain` in order.
///
/// # Errors
/// The first kernel that fails.
pub fn seal_chain(chain: &[Kernel], data: &[u8]) -> Result<Vec<u8>, KernelError> {
    let mut out = data.to_vec();
    for k in chain {
        out = k.seal(&out)?;
    }
    Ok(out)
}

/// Opens `data` through `chain` in reverse, no stage producing more than `limit` bytes.
///
/// # Errors
/// The first kernel that fails.
pub fn open_chain(chain: &[Kernel], data: &[u8], limit: usize) -> Result<Vec<u8>, KernelError> {
    let mut out = data.to_vec();
    for k in chain.iter().rev() {
        out = k.open(&out, limit)?;
    }
    Ok(out)
}

/// Which message of a call a field belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The request (sealed by the caller, opened by the service).
    Request,
    /// The reply (sealed by the service, opened by the caller).
    Reply,
}

/// The kernel chains of one method's fields: `(side, field index, chain)`, each field a
/// `bytes` field (single or repeated) of the side's message type.
#[derive(Debug, Clone, Default)]
pub struct FieldKernels {
    pub(crate) fields: Vec<(Side, usize, Vec<Kernel>)>,
}

impl FieldKernels {
    /// Adds `chain` on `field` of `side`'s message type (`input` for requests, `output` for
    /// replies).
    ///
    /// # Errors
    /// [`RpcError::Config`] when the type has no such field or it is not a `bytes` field
    /// (single or repeated).
    pub(crate) fn add(
        &mut self,
        schema: &SchemaSet,
        (input, output): (MessageId, MessageId),
        side: Side,
        field: &str,
        chain: Vec<Kernel>,
    ) -> Result<(), RpcError> {
        let ty = schema.message(match side {
            Side::Request => input,
            Side::Reply => output,
        });
        let index = ty
            .fields
            .iter()
            .position(|f| f.name == field)
            .ok_or_else(|| RpcError::Config(format!("{} has no field {field}", ty.full_name)))?;
        let f = &ty.fields[index];
        if f.kind != Kind::Bytes || f.cardinality == Cardinality::Map {
            return Err(RpcError::Config(format!(
                "{}.{field}: kernels run on bytes fields (single or repeated)",
                ty.full_name
            )));
        }
        self.fields.push((side, index, chain));
        Ok(())
    }

    /// The chains of `side`'s fields.
    pub(crate) fn on(&self, side: Side) -> impl Iterator<Item = (usize, &[Kernel])> {
        self.fields
            .iter()
            .filter(move |(s, _, _)| *s == side)
            .map(|(_, i, chain)| (*i, chain.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<Kernel> {
        vec![
            Kernel::Zstd { level: 3 },
            Kernel::Lz4,
            Kernel::AesGcm { key: [7; 32] },
            Kernel::ChaCha20Poly1305 { key: [9; 32] },
            Kernel::Crc32c,
        ]
    }

    #[test]
    fn every_kernel_round_trips_byte_exactly() {
        let inputs: [&[u8]; 3] = [b"", b"x", &[0xab; 100_000]];
        for k in all() {
            for data in inputs {
                let sealed = k.seal(data).unwrap();
                assert_eq!(k.open(&sealed, 1 << 20).unwrap(), data, "{k:?}");
            }
        }
        let chain = all();
        let text = b"the quick brown fox jumps over the lazy dog ".repeat(100);
        let sealed = seal_chain(&chain, &text).unwrap();
        assert_eq!(open_chain(&chain, &sealed, 1 << 20).unwrap(), text);
        let compressed = Kernel::Zstd { level: 3 }.seal(&text).unwrap();
        assert!(compressed.len() < text.len() / 10, "{}", compressed.len());
    }

    #[test]
    fn tampered_truncated_and_oversized_inputs_are_errors() {
        for k in all() {
            let sealed = k.seal(&[5u8; 4096]).unwrap();
            let mut bad = sealed.clone();
            let mid = bad.len() / 2;
            bad[mid] ^= 0x40;
            match k.open(&bad, 1 << 20) {
                Err(e) => assert_eq!(e.kernel, k.name()),
                // A flipped bit in compressed data can still decompress: then the data differ.
                Ok(out) => assert_ne!(out, vec![5u8; 4096], "{k:?}"),
            }
            for cut in [0, 1, 3, sealed.len() / 2] {
                let _ = k.open(&sealed[..cut], 1 << 20); // an error or other bytes, never a panic
            }
        }
        for k in [Kernel::Zstd { level: 1 }, Kernel::Lz4] {
            let sealed = k.seal(&vec![0u8; 1 << 20]).unwrap();
            let e = k.open(&sealed, 1000).unwrap_err();
            assert!(e.why.contains("limit") || e.kernel == k.name(), "{e}");
        }
        let wrong_key = Kernel::AesGcm { key: [8; 32] };
        let sealed = Kernel::AesGcm { key: [7; 32] }.seal(b"secret").unwrap();
        assert!(wrong_key
            .open(&sealed, 100)
            .unwrap_err()
            .why
            .contains("authentication failed"));
        // An LZ4 frame that claims a huge size allocates nothing.
        let lie = [0xff, 0xff, 0xff, 0x7f, 0x00];
        assert!(Kernel::Lz4
            .open(&lie, 1 << 20)
            .unwrap_err()
            .why
            .contains("limit"));
    }
}
