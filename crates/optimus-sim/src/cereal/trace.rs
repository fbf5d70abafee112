//! Reader of the traces the Java library writes (`dev.optimus.cereal.trace.CerealTrace`): every
//! object of a serialized graph in layout order with its class ID, value words and reference
//! targets, and the counts of each deserialized graph. Bad input is an error naming the byte
//! offset and what is wrong; nothing here panics on any input.

use crate::error::{Result, SimError};

/// The file's first bytes.
pub const MAGIC: &[u8; 4] = b"CRLT";
/// The version this reads.
pub const VERSION: u8 = 1;
/// Largest trace file the reader takes: 256 MiB (the embedded ones are a few KB).
pub const MAX_TRACE_BYTES: usize = 256 << 20;

/// One object of a serialized graph, in layout (breadth-first) order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceObject {
    /// Registered class ID (the header word's low 32 bits).
    pub class_id: u32,
    /// Value words, the header word included.
    pub value_words: u32,
    /// First layout word: the sum of the layout words of the objects before it.
    pub start_word: u32,
    /// Layout word each reference points to (its target's first word), `None` for null. The
    /// references are the object's last layout words.
    pub refs: Vec<Option<u32>>,
}

impl TraceObject {
    /// Layout words: value words plus reference words.
    pub fn words(&self) -> u64 {
        u64::from(self.value_words) + self.refs.len() as u64
    }
}

/// One serialized graph (an `S` record).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SerGraph {
    /// Objects in layout order; object 0 is the root.
    pub objects: Vec<TraceObject>,
    /// Layout words (value words + references).
    pub layout_words: u64,
    /// Bytes of the value array.
    pub value_bytes: u64,
    /// Bytes of the packed reference array.
    pub ref_bytes: u64,
    /// Bytes of the packed layout bitmap.
    pub bitmap_bytes: u64,
    /// Bytes of the whole frame (header and class names included).
    pub frame_bytes: u64,
}

impl SerGraph {
    /// All reference words, null ones included.
    pub fn ref_count(&self) -> u64 {
        self.objects.iter().map(|o| o.refs.len() as u64).sum()
    }
}

/// One deserialized graph (a `D` record).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeserGraph {
    /// Objects allocated.
    pub objects: u64,
    /// Value words (headers included; the others are copied into fields).
    pub value_words: u64,
    /// References fixed (null ones included).
    pub refs: u64,
    /// Bytes of the packed reference array read.
    pub ref_bytes: u64,
    /// Bytes of the packed bitmap read.
    pub bitmap_bytes: u64,
    /// Fix-up chunks (1 when sequential).
    pub chunks: u64,
    /// Whether the library fixed references in parallel.
    pub parallel: bool,
}

/// A whole trace file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// The workload's label, as the recorder was started with.
    pub label: String,
    /// Serialized graphs, in file order.
    pub ser: Vec<SerGraph>,
    /// Deserialized graphs, in file order.
    pub deser: Vec<DeserGraph>,
}

struct Cursor<'a> {
    name: &'a str,
    b: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn err(&self, at: usize, why: impl std::fmt::Display) -> SimError {
        SimError::Workload {
            name: self.name.to_string(),
            why: format!("Cereal trace, byte {at}: {why}"),
        }
    }

    fn byte(&mut self, what: &str) -> Result<u8> {
        let at = self.pos;
        let v = *self
            .b
            .get(at)
            .ok_or_else(|| self.err(at, format!("truncated: {what} missing")))?;
        self.pos += 1;
        Ok(v)
    }

    /// An unsigned LEB128 varint of at most 5 bytes holding a non-negative 32-bit int.
    fn varint(&mut self, what: &str) -> Result<u32> {
        let at = self.pos;
        let mut v: u64 = 0;
        for i in 0..5 {
            let x = self.byte(what)?;
            v |= u64::from(x & 0x7F) << (7 * i);
            if x < 0x80 {
                return u32::try_from(v)
                    .ok()
                    .filter(|v| *v <= i32::MAX as u32)
                    .ok_or_else(|| self.err(at, format!("{what} {v} is past 2^31 - 1")));
            }
        }
        Err(self.err(at, format!("{what}: varint longer than 5 bytes")))
    }

    fn left(&self) -> usize {
        self.b.len() - self.pos
    }
}

/// Reads a trace file's bytes; `name` labels errors (the file or workload name).
///
/// # Errors
/// [`SimError::Workload`] naming the byte offset: bad magic or version, an unknown record,
/// truncation, counts that disagree with the objects (layout words, references, frame
/// sections), a reference to something other than an object's first word, objects not in the
/// order their first references reach them, no end record or bytes after it, or end counts
/// that disagree with the records.
pub fn parse(name: &str, b: &[u8]) -> Result<Trace> {
    let mut c = Cursor { name, b, pos: 0 };
    if b.len() > MAX_TRACE_BYTES {
        return Err(c.err(
            0,
            format!("{} bytes is over the limit of {MAX_TRACE_BYTES}", b.len()),
        ));
    }
    if b.len() < 4 || &b[..4] != MAGIC {
        return Err(c.err(0, "not a Cereal trace (no CRLT magic)"));
    }
    c.pos = 4;
    let v = c.byte("version")?;
    if v != VERSION {
        return Err(c.err(4, format!("version {v}, this reads {VERSION}")));
    }
    let at = c.pos;
    let len = c.varint("label length")? as usize;
    if len > c.left() {
        return Err(c.err(at, format!("label of {len} bytes is past the end")));
    }
    let label = std::str::from_utf8(&b[c.pos..c.pos + len])
        .map_err(|_| c.err(c.pos, "label is not UTF-8"))?
        .to_string();
    c.pos += len;
    let mut trace = Trace {
        label,
        ser: Vec::new(),
        deser: Vec::new(),
    };
    loop {
        let at = c.pos;
        match c.byte("record tag (no end record)")? {
            b'S' => trace.ser.push(ser_record(&mut c)?),
            b'D' => trace.deser.push(deser_record(&mut c)?),
            b'E' => {
                let s = c.varint("serialize record count")? as usize;
                let d = c.varint("deserialize record count")? as usize;
                if (s, d) != (trace.ser.len(), trace.deser.len()) {
                    return Err(c.err(
                        at,
                        format!(
                            "end record counts {s} serialized and {d} deserialized graphs, the file holds {} and {}",
                            trace.ser.len(),
                            trace.deser.len()
                        ),
                    ));
                }
                if c.left() != 0 {
                    return Err(c.err(c.pos, format!("{} bytes after the end record", c.left())));
                }
                return Ok(trace);
            }
            t => return Err(c.err(at, format!("unknown record tag 0x{t:02x}"))),
        }
    }
}

fn ser_record(c: &mut Cursor<'_>) -> Result<SerGraph> {
    let at = c.pos;
    let count = c.varint("object count")? as usize;
    let layout_words = u64::from(c.varint("layout words")?);
    let value_bytes = u64::from(c.varint("value bytes")?);
    let ref_bytes = u64::from(c.varint("reference bytes")?);
    let bitmap_bytes = u64::from(c.varint("bitmap bytes")?);
    let frame_bytes = u64::from(c.varint("frame bytes")?);
    // Each object takes at least 3 bytes: nothing is allocated past what the file can hold.
    if count > c.left() / 3 {
        return Err(c.err(
            at,
            format!("{count} objects cannot fit the {} bytes left", c.left()),
        ));
    }
    let mut objects = Vec::with_capacity(count);
    let mut word: u64 = 0;
    let mut value_words: u64 = 0;
    for i in 0..count {
        let at = c.pos;
        let class_id = c.varint("class ID")?;
        let vw = c.varint("value words")?;
        if vw == 0 {
            return Err(c.err(at, format!("object {i} has no header word")));
        }
        let rc = c.varint("reference count")? as usize;
        if rc > c.left() {
            return Err(c.err(
                at,
                format!("object {i}: {rc} references cannot fit the bytes left"),
            ));
        }
        let mut refs = Vec::with_capacity(rc);
        for _ in 0..rc {
            let t = c.varint("reference target")?;
            refs.push(t.checked_sub(1));
        }
        if word > u64::from(u32::MAX) {
            return Err(c.err(at, "layout past 2^32 words"));
        }
        let o = TraceObject {
            class_id,
            value_words: vw,
            start_word: word as u32,
            refs,
        };
        word += o.words();
        value_words += u64::from(vw);
        objects.push(o);
    }
    if word != layout_words {
        return Err(c.err(
            at,
            format!("objects take {word} layout words, the record says {layout_words}"),
        ));
    }
    if value_words * 8 != value_bytes {
        return Err(c.err(
            at,
            format!("objects hold {value_words} value words, the record says {value_bytes} bytes"),
        ));
    }
    let refs: u64 = objects.iter().map(|o| o.refs.len() as u64).sum();
    let min_ref_bytes = refs.div_ceil(16);
    if ref_bytes < min_ref_bytes || ref_bytes > min_ref_bytes + 4 * refs {
        return Err(c.err(
            at,
            format!("{refs} references cannot pack into {ref_bytes} bytes"),
        ));
    }
    let groups = layout_words.div_ceil(64);
    if bitmap_bytes < groups.div_ceil(8) || bitmap_bytes > groups.div_ceil(8) + 8 * groups {
        return Err(c.err(
            at,
            format!("{layout_words} layout words cannot take {bitmap_bytes} bitmap bytes"),
        ));
    }
    if frame_bytes < value_bytes + ref_bytes + bitmap_bytes {
        return Err(c.err(
            at,
            format!("frame of {frame_bytes} bytes is smaller than its sections"),
        ));
    }
    // Every target is an object's first word, and objects come in the order their first
    // references reach them (the writer's breadth-first discovery), the root first.
    let mut next_new: usize = 1;
    for (i, o) in objects.iter().enumerate() {
        for t in o.refs.iter().flatten() {
            let j = objects
                .binary_search_by_key(t, |x| x.start_word)
                .map_err(|_| c.err(at, format!("object {i} points to layout word {t}, which is not an object's first word")))?;
            if j > next_new {
                return Err(c.err(at, format!("object {i} reaches object {j} before object {next_new}: not breadth-first order")));
            }
            if j == next_new {
                next_new += 1;
            }
        }
    }
    if next_new != objects.len().max(1) {
        return Err(c.err(
            at,
            format!("object {next_new} is never reached from the root"),
        ));
    }
    Ok(SerGraph {
        objects,
        layout_words,
        value_bytes,
        ref_bytes,
        bitmap_bytes,
        frame_bytes,
    })
}

fn deser_record(c: &mut Cursor<'_>) -> Result<DeserGraph> {
    let at = c.pos;
    let objects = u64::from(c.varint("objects")?);
    let value_words = u64::from(c.varint("value words")?);
    let refs = u64::from(c.varint("references")?);
    let ref_bytes = u64::from(c.varint("reference bytes")?);
    let bitmap_bytes = u64::from(c.varint("bitmap bytes")?);
    let chunks = u64::from(c.varint("chunks")?);
    let parallel = match c.varint("parallel flag")? {
        0 => false,
        1 => true,
        v => return Err(c.err(c.pos - 1, format!("parallel flag {v}, not 0 or 1"))),
    };
    if objects > value_words {
        return Err(c.err(
            at,
            format!("{objects} objects cannot fit {value_words} value words"),
        ));
    }
    if chunks == 0 && objects > 0 {
        return Err(c.err(at, "no fix-up chunk"));
    }
    Ok(DeserGraph {
        objects,
        value_words,
        refs,
        ref_bytes,
        bitmap_bytes,
        chunks,
        parallel,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace of one 2-node list (root -> node), serialized and deserialized.
    fn list2() -> Vec<u8> {
        let mut b = b"CRLT\x01\x02l2".to_vec();
        // S: 2 objects, 8 words, 48 value bytes, 3 ref bytes (width byte + 2), 9 bitmap bytes
        b.extend([b'S', 2, 8, 48, 3, 9, 70]);
        b.extend([39, 3, 1, 5]); // class 39, 3 value words, 1 ref -> word 4
        b.extend([39, 3, 1, 0]); // null
        b.extend([b'D', 2, 6, 2, 3, 9, 1, 0]);
        b.extend([b'E', 1, 1]);
        b
    }

    #[test]
    fn reads_a_small_trace() {
        let t = parse("t", &list2()).unwrap();
        assert_eq!(t.label, "l2");
        assert_eq!(t.ser.len(), 1);
        let g = &t.ser[0];
        assert_eq!(g.objects[1].start_word, 4);
        assert_eq!(g.objects[0].refs, vec![Some(4)]);
        assert_eq!(g.objects[1].refs, vec![None]);
        assert_eq!(g.ref_count(), 2);
        assert_eq!(t.deser[0].refs, 2);
    }

    #[test]
    fn every_truncation_and_byte_flip_is_an_error_or_a_trace_never_a_panic() {
        let good = list2();
        for n in 0..good.len() {
            let e = parse("t", &good[..n]).unwrap_err().to_string();
            assert!(e.contains("Cereal trace, byte"), "{e}");
        }
        for i in 0..good.len() {
            for bit in 0..8 {
                let mut b = good.clone();
                b[i] ^= 1 << bit;
                let _ = parse("t", &b);
            }
        }
    }

    #[test]
    fn inconsistent_records_are_refused_with_the_reason() {
        let cases: [(usize, u8, &str); 5] = [
            (0, b'X', "magic"),
            (4, 2, "version 2"),
            (18, 6, "not an object's first word"), // ref -> word 5
            (10, 9, "layout words"),
            (32, 2, "end record counts"),
        ];
        for (at, v, why) in cases {
            let mut b = list2();
            b[at] = v;
            let e = parse("t", &b).unwrap_err().to_string();
            assert!(e.contains(why), "{at}: {e}");
        }
        let mut extra = list2();
        extra.push(0);
        assert!(parse("t", &extra)
            .unwrap_err()
            .to_string()
            .contains("after the end"));
    }

    #[test]
    fn objects_out_of_discovery_order_are_refused() {
        // Root points to word 8 (object 2) before word 4 (object 1).
        let mut b = b"CRLT\x01\x00".to_vec();
        b.extend([b'S', 3, 8, 48, 3, 9, 70]);
        b.extend([1, 2, 2, 7, 5]);
        b.extend([1, 2, 0]);
        b.extend([1, 2, 0]);
        b.extend([b'E', 1, 0]);
        let e = parse("t", &b).unwrap_err().to_string();
        assert!(e.contains("breadth-first"), "{e}");
    }
}
