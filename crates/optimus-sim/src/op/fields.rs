//! The fields as the Reader walks them. The trace gives each value of a list an item of its
//! own; the values of a list of scalars lie in one array behind the list's one schema entry,
//! so the Reader reads them as one field, which takes one Field Buffer entry and streams
//! through the array's lines as a long string does. A list of strings, bytes or
//! sub-messages stays a field per value (each its own object behind a pointer), as does an
//! unpacked list on decode (its entry looked up again at each tag).

use optimus_trace::Direction;

use crate::program::{Item, Program};

/// Whether `it`, the item after `prev`, holds later values of `prev`'s list of scalars: on
/// encode, values after the first of a list read from one array ([`Item::list_index`]); on
/// decode, scalars read without a schema entry of their own, after scalars at the same depth
/// (a packed list's values after the first; an unpacked list looks its entry up at each tag).
fn continues_list(p: &Program, prev: &Item, it: &Item) -> bool {
    match p.direction {
        Some(Direction::Encode) => it.continues_scalar_list(),
        _ => {
            let accesses = &p.accesses[it.first_access as usize..it.end_access as usize];
            it.depth == prev.depth
                && prev.converts_scalars()
                && it.converts_scalars()
                && !accesses.is_empty()
                && accesses.iter().all(|a| !a.is_schema)
        }
    }
}

/// `p` with each list of scalars one item: its values' converter ops and writes in order, and
/// their accesses with those of a line the list has just read folded into its access (the
/// values after the first on a line come with it, their bytes counted there), so that the
/// array's lines form one run. Dependences follow the accesses kept.
pub(super) fn one_item_per_list(p: &Program) -> Program {
    let mut out = Program {
        direction: p.direction,
        wire_bytes: p.wire_bytes,
        max_depth: p.max_depth,
        accesses: Vec::with_capacity(p.accesses.len()),
        items: Vec::with_capacity(p.items.len()),
    };
    // Per access of `p`: the access of `out` that reads its line for it.
    let mut kept = vec![0u32; p.accesses.len()];
    // The current item's latest data access in `out`.
    let mut last_data: Option<usize> = None;
    for (k, it) in p.items.iter().enumerate() {
        let merged = k > 0 && continues_list(p, &p.items[k - 1], it);
        if !merged {
            last_data = None;
            let at = out.accesses.len() as u32;
            out.items.push(Item {
                first_access: at,
                end_access: at,
                converts: Vec::new(),
                writes: Vec::new(),
                depth: it.depth,
                list_index: it.list_index,
            });
        }
        let item = out.items.len() - 1;
        for a in it.first_access as usize..it.end_access as usize {
            let acc = p.accesses[a];
            let same_line = last_data.filter(|&l| {
                let l = &out.accesses[l];
                merged && !acc.is_schema && l.line == acc.line && l.region == acc.region
            });
            if let Some(l) = same_line {
                kept[a] = l as u32;
                let line = &mut out.accesses[l];
                line.bytes = line.bytes.saturating_add(acc.bytes);
                continue;
            }
            kept[a] = out.accesses.len() as u32;
            if !acc.is_schema {
                last_data = Some(out.accesses.len());
            }
            let mut acc = acc;
            acc.dep = acc.dep.map(|d| kept[d as usize]);
            acc.item = item as u32;
            out.accesses.push(acc);
        }
        let to = &mut out.items[item];
        to.end_access = out.accesses.len() as u32;
        to.converts.extend_from_slice(&it.converts);
        to.writes.extend_from_slice(&it.writes);
    }
    out
}

#[cfg(test)]
mod tests {
    use optimus_core::binary::EngineTraces as Engine;
    use optimus_trace::Direction;

    use super::*;
    use crate::op::{self, OpConfig};
    use crate::workload::{trace_messages, MessageTrace};

    const PROTO: &str = r#"syntax = "proto3"; package t;
        message L {
          repeated int32 v = 1;
          string s = 2;
          repeated uint64 w = 3 [packed = false];
        }"#;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    /// `L` with `v` = 0..values (packed), `s` of 100 characters and `w` = 0..40 (unpacked).
    fn message(values: u64) -> Vec<u8> {
        let mut packed = Vec::new();
        (0..values).for_each(|v| varint(v, &mut packed));
        let mut m = vec![0x0a];
        varint(packed.len() as u64, &mut m);
        m.extend(packed);
        m.extend([0x12, 100]);
        m.extend([b'x'; 100]);
        for w in 0..40 {
            m.push(0x18);
            varint(w, &mut m);
        }
        m
    }

    fn traced(values: u64, direction: Direction) -> MessageTrace {
        let bytes = message(values);
        let mut t =
            trace_messages(&mut Engine, "l", PROTO, &[("t.L", &bytes)], direction, &[]).unwrap();
        t.remove(0)
    }

    #[test]
    fn a_list_of_scalars_is_one_item_over_its_arrays_lines() {
        // Encode reads each list from its array: `v` and `w` are one item each. Decode reads
        // `v`'s values after one tag and looks `w`'s entry up again at each of its 40 tags.
        for (direction, items) in [(Direction::Encode, 3), (Direction::Decode, 42)] {
            let p = Program::from_trace(&traced(300, direction));
            let q = one_item_per_list(&p);
            assert_eq!(p.items.len(), 300 + 1 + 40, "{direction:?}");
            assert_eq!(q.items.len(), items, "{direction:?}");
            // Every value's conversion and write is kept, in order.
            let ops = |p: &Program| -> Vec<(u16, u32)> {
                p.items.iter().flat_map(|i| i.converts.clone()).collect()
            };
            let writes =
                |p: &Program| -> Vec<_> { p.items.iter().flat_map(|i| i.writes.clone()).collect() };
            assert_eq!(ops(&q), ops(&p));
            assert_eq!(writes(&q), writes(&p));
            let read = |p: &Program| p.accesses.iter().map(|a| u64::from(a.bytes)).sum::<u64>();
            assert_eq!(read(&q), read(&p));
            assert_eq!(q.items[0].converts.len(), 300);
            // The list's data lines form one run, each line read once; every access still
            // depends on an earlier one, and belongs to its item.
            let v = &q.accesses[q.items[0].first_access as usize..q.items[0].end_access as usize];
            let data: Vec<u64> = v.iter().filter(|a| !a.is_schema).map(|a| a.line).collect();
            assert!(
                data.windows(2).all(|l| l[1] == l[0] + 1),
                "{direction:?}: {data:?}"
            );
            let span = if direction == Direction::Encode {
                300 * 4
            } else {
                300 * 2
            };
            assert!(
                data.len() <= span / 64 + 2,
                "{direction:?}: {} lines",
                data.len()
            );
            for (i, it) in q.items.iter().enumerate() {
                for (k, a) in q.accesses[it.first_access as usize..it.end_access as usize]
                    .iter()
                    .enumerate()
                {
                    assert_eq!(a.item as usize, i);
                    assert!(a.dep.is_none_or(|d| d < it.first_access + k as u32));
                }
            }
        }
    }

    #[test]
    fn a_decode_streams_its_serialized_buffer_past_the_field_buffer() {
        // 4,096 values of `w`, each after a tag of its own: a field each, 12 of which the
        // Field Buffer holds, but the serialized buffer's lines stream in the field window,
        // so the Reader seldom waits (it waited about half its cycles when the buffer was
        // fetched only 12 values ahead).
        let mut m = Vec::new();
        for w in 0..4096 {
            m.push(0x18);
            varint(w, &mut m);
        }
        let t = trace_messages(
            &mut Engine,
            "w",
            PROTO,
            &[("t.L", &m)],
            Direction::Decode,
            &[],
        )
        .unwrap();
        let r = op::run(&OpConfig::default(), &t).unwrap();
        let stat = |k: &str| r.stats.get(k).unwrap();
        // Fields count as they are read, messages as they complete.
        let per_message = stat("pipeline0.reader.fields") / stat("pipeline0.reader.messages");
        assert!((4000.0..4200.0).contains(&per_message), "{per_message}");
        let busy = stat("pipeline0.reader.busy_cycles");
        let stalled = stat("pipeline0.reader.stall_cycles");
        assert!(stalled < 0.05 * busy, "{stalled} of {busy}");
    }

    #[test]
    fn the_reader_streams_a_list_a_chunk_a_cycle() {
        // 4,096 values (16 KB in the object, 256 lines): after the first lines, a Chunk a
        // cycle, the Reader seldom waiting on memory.
        for direction in [Direction::Encode, Direction::Decode] {
            let t = traced(4096, direction);
            let r = op::run(&OpConfig::default(), &[t]).unwrap();
            let stat = |k: &str| r.stats.get(k).unwrap();
            let messages = stat("pipeline0.reader.messages");
            let fields = if direction == Direction::Encode {
                3.0
            } else {
                42.0
            };
            assert_eq!(stat("pipeline0.reader.fields"), fields * messages);
            let busy = stat("pipeline0.reader.busy_cycles");
            let stalled = stat("pipeline0.reader.stall_cycles");
            assert!(stalled < 0.05 * busy, "{direction:?}: {stalled} of {busy}");
        }
    }
}
