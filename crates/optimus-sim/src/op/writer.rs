//! The Writer (§4.5): takes converted Chunks into its write buffers, each assembling the cache
//! line of output one message is writing, and writes each line through the Block Buffer to
//! its home bank once it is full or the message's output moves on to another line; a message
//! completes once its last write has issued.

use std::collections::VecDeque;

use optimus_trace::Region;

use super::config::WriterConfig;
use super::memsys::{MemorySystem, WriteWait};
use super::pipeline::Chunk;
use crate::program::{Program, LINE_BYTES};
use crate::stats::counters;

/// Line writes the Writer may have waiting for a port before it stops taking Chunks.
const MAX_BACKLOG: usize = 2;

counters!(
    /// Writer counters.
    WriterStats {
        /// Chunks written into the write buffer.
        chunks,
        /// Line writes issued.
        lines,
        /// Bytes of output.
        bytes,
        /// Cycles a waiting line write found every Block Buffer port taken.
        port_stall_cycles,
        /// Cycles a waiting line write found OP's NoC port booked more than
        /// `noc.write_backlog_cycles` ahead.
        write_backlog_stall_cycles,
        /// Line writes of a message's partly assembled line, written because a Chunk of
        /// another message brought output and every write buffer was taken (time-sharing
        /// past `writer.write_buffers` messages): the message writes the line again if it
        /// comes back to it. Included in `lines`.
        switch_flushes,
    }
);

/// The bytes of a message's output that fall in one line, and where they end in the
/// message's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct OutputPiece {
    region: Region,
    line: u64,
    bytes: u32,
    /// Bytes of the message's output up to the end of this piece.
    end: u64,
}

/// A message's output as the Writer receives it: every write of every item, in order, split
/// at line boundaries. A Chunk carries a byte range of it ([`Chunk::out_from`],
/// [`Chunk::out_bytes`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct MessageOutput {
    pieces: Vec<OutputPiece>,
    /// Per item: bytes of the message's output up to the end of the item's.
    item_end: Vec<u64>,
}

impl MessageOutput {
    /// The output of `p`, at the addresses `p` writes (relocated, as the request writes it).
    pub(super) fn of(p: &Program) -> Self {
        let mut out = MessageOutput::default();
        let mut total = 0u64;
        for it in &p.items {
            for &(region, addr, bytes) in &it.writes {
                let end = addr + u64::from(bytes);
                let mut at = addr;
                while at < end {
                    let line = at / LINE_BYTES;
                    let upto = end.min((line + 1) * LINE_BYTES);
                    total += upto - at;
                    out.pieces.push(OutputPiece {
                        region,
                        line,
                        bytes: (upto - at) as u32,
                        end: total,
                    });
                    at = upto;
                }
            }
            out.item_end.push(total);
        }
        out
    }

    /// Where item `i`'s output starts in the message's, and its bytes (none past the last
    /// item).
    pub(super) fn item_span(&self, i: usize) -> (u64, u32) {
        let end = |k: usize| {
            let end = self.item_end.get(k).or(self.item_end.last());
            end.copied().unwrap_or(0)
        };
        let from = i.checked_sub(1).map_or(0, end);
        (from, (end(i) - from) as u32)
    }

    /// `(region, line, bytes)` of the output bytes `from..from + bytes`, in order: none if
    /// `bytes` is 0.
    fn pieces(&self, from: u64, bytes: u32) -> impl Iterator<Item = (Region, u64, u32)> + '_ {
        let to = from + u64::from(bytes);
        let first = match bytes {
            0 => self.pieces.len(),
            _ => self.pieces.partition_point(|p| p.end <= from),
        };
        self.pieces[first..]
            .iter()
            .take_while(move |p| p.end - u64::from(p.bytes) < to)
            .map(move |p| {
                let start = p.end - u64::from(p.bytes);
                let taken = p.end.min(to) - start.max(from);
                (p.region, p.line, taken as u32)
            })
    }
}

/// A line a write buffer is assembling: whose, where, and the bytes it holds so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct OpenLine {
    txn: u64,
    region: Region,
    line: u64,
    filled: u64,
}

/// One pipeline's Writer.
#[derive(Clone, Debug, Default)]
pub(super) struct Writer {
    /// The lines the write buffers are assembling, oldest first, at most one per message.
    /// The Writer keeps no other state per message (§4.6): a message whose output finds
    /// every buffer taken writes out the oldest line.
    open: VecDeque<OpenLine>,
    /// Line writes waiting to issue, in the order they were taken: each line's address.
    backlog: VecDeque<u64>,
    /// Line writes issued since cycle 0.
    issued: u64,
    /// Messages whose last Chunk the Writer has taken, oldest first, each with the count of
    /// `issued` by which its last line write has issued: it completes then (§4.5).
    finishing: VecDeque<(u64, u64)>,
    /// First cycle the Writer can take another Chunk.
    free_at: u64,
    pub(super) stats: WriterStats,
}

impl Writer {
    /// One cycle: issues waiting line writes while a port is free, then takes the next
    /// converted Chunk that has left the Converter, unless too many writes wait. Returns the
    /// Chunk taken; a message whose last Chunk it is completes once its writes have issued
    /// ([`Writer::completed`]).
    pub(super) fn tick(
        &mut self,
        now: u64,
        cfg: &WriterConfig,
        mem: &mut MemorySystem,
        input: &mut VecDeque<(u64, Chunk)>,
        measuring: bool,
    ) -> Option<Chunk> {
        while let Some(&line) = self.backlog.front() {
            if let Err(wait) = mem.write_line(now, line) {
                if measuring {
                    match wait {
                        WriteWait::BlockBufferPort => self.stats.port_stall_cycles += 1,
                        WriteWait::WriteBacklog => self.stats.write_backlog_stall_cycles += 1,
                    }
                }
                break;
            }
            self.backlog.pop_front();
            self.issued += 1;
            if measuring {
                self.stats.lines += 1;
            }
        }
        let &(at, _) = input.front()?;
        if at > now || self.backlog.len() > MAX_BACKLOG || self.free_at > now {
            return None;
        }
        let (_, c) = input.pop_front()?;
        self.free_at = now + u64::from(cfg.cycles_per_chunk);
        if measuring {
            self.stats.chunks += 1;
            self.stats.bytes += u64::from(c.out_bytes);
        }
        self.take_output(&c, cfg.write_buffers as usize, measuring);
        if c.last {
            // Its writes are the last of those waiting.
            self.finishing
                .push_back((c.txn, self.issued + self.backlog.len() as u64));
        }
        Some(c)
    }

    /// Puts `c`'s output into the `buffers` write buffers, queueing the writes of the lines
    /// it fills or leaves; the message's last Chunk also writes its line still open.
    fn take_output(&mut self, c: &Chunk, buffers: usize, measuring: bool) {
        if let Some(output) = &c.output {
            for (region, line, bytes) in output.pieces(c.out_from, c.out_bytes) {
                self.assemble(c.txn, region, line, bytes, buffers, measuring);
            }
        }
        if c.last {
            if let Some(open) = self.take_open(c.txn) {
                self.backlog.push_back(open.line);
            }
        }
    }

    /// Message `txn`'s line being assembled, taken out of its write buffer.
    fn take_open(&mut self, txn: u64) -> Option<OpenLine> {
        let i = self.open.iter().position(|o| o.txn == txn)?;
        self.open.remove(i)
    }

    /// Adds `bytes` of message `txn`'s output in `line` of `region` to the write buffers: the
    /// line the message was assembling is written if this is another one, the oldest line
    /// of another message if all `buffers` are taken, and this one once full.
    fn assemble(
        &mut self,
        txn: u64,
        region: Region,
        line: u64,
        bytes: u32,
        buffers: usize,
        measuring: bool,
    ) {
        let filled = match self.take_open(txn) {
            Some(o) if (o.region, o.line) == (region, line) => o.filled,
            Some(o) => {
                self.backlog.push_back(o.line);
                0
            }
            None => {
                if self.open.len() >= buffers {
                    if let Some(oldest) = self.open.pop_front() {
                        self.backlog.push_back(oldest.line);
                        if measuring {
                            self.stats.switch_flushes += 1;
                        }
                    }
                }
                0
            }
        } + u64::from(bytes);
        if filled >= LINE_BYTES {
            self.backlog.push_back(line);
        } else {
            self.open.push_back(OpenLine {
                txn,
                region,
                line,
                filled,
            });
        }
    }

    /// The next message whose writes have all issued, oldest first: "once the Writer issues
    /// all the writes for a request, it notifies the Dispatcher of completion" (§4.5).
    pub(super) fn completed(&mut self) -> Option<u64> {
        let &(txn, done_at) = self.finishing.front()?;
        (self.issued >= done_at).then(|| {
            self.finishing.pop_front();
            txn
        })
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    use super::*;
    use crate::op::OpConfig;
    use crate::program::Item;

    /// A program whose items write `writes` (one list per item).
    fn writing(writes: &[&[(Region, u64, u32)]]) -> Program {
        Program {
            items: writes
                .iter()
                .map(|w| Item {
                    writes: w.to_vec(),
                    ..Item::default()
                })
                .collect(),
            ..Program::default()
        }
    }

    /// Per item of `p`, a Chunk of transformation `txn` carrying the item's whole output, the
    /// last one the message's last.
    fn item_chunks(txn: u64, p: &Program) -> Vec<Chunk> {
        let output = Rc::new(MessageOutput::of(p));
        (0..p.items.len())
            .map(|i| {
                let (out_from, out_bytes) = output.item_span(i);
                Chunk {
                    txn,
                    out_from,
                    out_bytes,
                    output: Some(Rc::clone(&output)),
                    last: i + 1 == p.items.len(),
                    ..Chunk::default()
                }
            })
            .collect()
    }

    /// Per Chunk, the lines whose writes taking it queues, in order.
    fn lines_written(chunks: &[Chunk]) -> Vec<Vec<u64>> {
        let mut w = Writer::default();
        chunks
            .iter()
            .map(|c| {
                w.take_output(c, 1, true);
                w.backlog.drain(..).collect()
            })
            .collect()
    }

    #[test]
    fn serialized_output_is_written_a_full_line_at_a_time() {
        // 40-byte fields one after the other: the second fills line 0, the fourth line 1 and
        // half of line 2, the last line goes out with the message.
        let b = Region::Buffer;
        let p = writing(&[
            &[(b, 0, 40)],
            &[(b, 40, 40)],
            &[(b, 80, 40)],
            &[(b, 120, 60)],
            &[(b, 180, 10)],
        ]);
        let none: Vec<u64> = Vec::new();
        assert_eq!(
            lines_written(&item_chunks(1, &p)),
            [none.clone(), vec![0], none, vec![1], vec![2]]
        );
    }

    #[test]
    fn scattered_output_is_written_when_it_moves_to_another_line() {
        // Deserialization: two fields into one record line, a string payload two lines away,
        // then back into the record: each move writes the line left behind.
        let m = Region::Message;
        let p = writing(&[
            &[(m, 0x100, 8)],
            &[(m, 0x108, 8), (m, 0x180, 100)],
            &[(m, 0x110, 4)],
        ]);
        // Item 1: leaving line 4, filling line 6; line 7 stays open. Item 2: leaving line 7;
        // line 4 again, open, written with the message.
        assert_eq!(
            lines_written(&item_chunks(1, &p)),
            [vec![], vec![4, 6], vec![7, 4]]
        );
        // Equal addresses in different regions are different lines.
        let same = writing(&[&[(m, 0, 8)], &[(Region::Buffer, 0, 8)]]);
        assert_eq!(lines_written(&item_chunks(1, &same)), [vec![], vec![0, 0]]);
    }

    #[test]
    fn another_messages_output_writes_out_the_oldest_line_when_no_buffer_is_free() {
        // Two messages of two 32-byte fields each, filling line 0 and line 10 of their
        // serialized buffers. Taken one message after the other, each fills its line and
        // writes it once. Taken alternately, as time-shared contexts emit them, with one write
        // buffer each Chunk finds the other message's half line in it and writes it out (a
        // switch flush); message 1 then assembles line 0 again and writes it a second time.
        // With two buffers each message keeps its line.
        let b = Region::Buffer;
        let one = item_chunks(1, &writing(&[&[(b, 0, 32)], &[(b, 32, 32)]]));
        let two = item_chunks(2, &writing(&[&[(b, 640, 32)], &[(b, 672, 32)]]));
        let flushes_with = |buffers: usize, chunks: &[Chunk]| {
            let mut w = Writer::default();
            let lines: Vec<Vec<u64>> = chunks
                .iter()
                .map(|c| {
                    w.take_output(c, buffers, true);
                    w.backlog.drain(..).collect()
                })
                .collect();
            (lines, w.stats.switch_flushes)
        };
        let none = Vec::new;
        let in_turn = [
            one[0].clone(),
            one[1].clone(),
            two[0].clone(),
            two[1].clone(),
        ];
        let flushes = |chunks: &[Chunk]| flushes_with(1, chunks);
        assert_eq!(
            flushes(&in_turn),
            (vec![none(), vec![0], none(), vec![10]], 0)
        );
        let alternating = [
            one[0].clone(),
            two[0].clone(),
            one[1].clone(),
            two[1].clone(),
        ];
        assert_eq!(
            flushes(&alternating),
            (vec![none(), vec![0], vec![10, 0], vec![10]], 2)
        );
        assert_eq!(
            flushes_with(2, &alternating),
            (vec![none(), none(), vec![0], vec![10]], 0)
        );
        // A Chunk of another message that brings no output (a streaming field's Chunk whose
        // share of its output is nothing) leaves the line open.
        let quiet = Chunk {
            out_from: 8,
            out_bytes: 0,
            ..two[0].clone()
        };
        let between = [one[0].clone(), quiet, one[1].clone()];
        assert_eq!(flushes(&between), (vec![none(), none(), vec![0]], 0));
    }

    #[test]
    fn a_streaming_fields_lines_are_written_as_its_chunks_complete_them() {
        // 136 bytes from byte 0x48 on, in 17 Chunks of 8 bytes. Line 1 gets 56 bytes
        // (0x48..0x80), never a full line's worth: it is written when the output moves on to
        // line 2, with the eighth Chunk; line 2 is full with the fifteenth, and the rest of
        // line 3 (16 bytes) goes with the message's last.
        let p = writing(&[&[(Region::Buffer, 0x48, 136)]]);
        let output = Rc::new(MessageOutput::of(&p));
        let chunks: Vec<Chunk> = (0..17)
            .map(|k| Chunk {
                out_from: 8 * k,
                out_bytes: 8,
                output: Some(Rc::clone(&output)),
                last: k == 16,
                ..Chunk::default()
            })
            .collect();
        let written = lines_written(&chunks);
        let at: Vec<(usize, u64)> = written
            .iter()
            .enumerate()
            .flat_map(|(k, lines)| lines.iter().map(move |&l| (k, l)))
            .collect();
        assert_eq!(at, [(7, 1), (14, 2), (16, 3)]);
    }

    /// What a Writer did from cycle 0 on some Chunks.
    struct Run {
        /// Cycles it took each Chunk in.
        taken: Vec<u64>,
        /// Cycles messages completed in, with their transformation.
        completed: Vec<(u64, u64)>,
        stats: WriterStats,
        /// The Block Buffer's line writes.
        writes: u64,
        /// Flit-hops of the mesh: the writes' and their acknowledgements'.
        flit_hops: u64,
    }

    /// Runs a Writer from cycle 0 on `chunks` (each there at its cycle), OP on a 2x2 mesh.
    fn run(cfg: &WriterConfig, chunks: &[(u64, Chunk)]) -> Run {
        let mut op = OpConfig::paper_4x4(1, 1);
        op.noc.mesh = 2;
        let mut mem = MemorySystem::new(&op, ChaCha8Rng::seed_from_u64(1));
        let mut w = Writer::default();
        let mut input: VecDeque<(u64, Chunk)> = chunks.iter().cloned().collect();
        let (mut taken, mut completed) = (Vec::new(), Vec::new());
        for now in 0..50 {
            if w.tick(now, cfg, &mut mem, &mut input, true).is_some() {
                taken.push(now);
            }
            while let Some(txn) = w.completed() {
                completed.push((now, txn));
            }
        }
        Run {
            taken,
            completed,
            stats: w.stats,
            writes: mem.bb.stats.writes,
            flit_hops: mem.mesh.flit_hops(),
        }
    }

    /// A Chunk of transformation `txn` whose output fills serialized-buffer lines
    /// `first..first + lines` (ending its message if `last`).
    fn filling(txn: u64, first: u64, lines: u32, last: bool) -> Chunk {
        let p = writing(&[&[(Region::Buffer, first * LINE_BYTES, lines * 64)]]);
        Chunk {
            last,
            ..item_chunks(txn, &p).remove(0)
        }
    }

    #[test]
    fn one_chunk_per_cycle_and_its_lines_on_the_next() {
        let chunks = [
            (0, filling(1, 0, 0, false)),
            (0, filling(1, 0, 1, false)),
            (5, filling(1, 1, 0, false)),
            (5, filling(1, 1, 2, false)),
        ];
        let r = run(&WriterConfig::default(), &chunks);
        assert_eq!(r.taken, vec![0, 1, 5, 6]);
        assert_eq!(
            (r.stats.chunks, r.stats.bytes, r.stats.lines, r.writes),
            (4, 3 * 64, 3, 3)
        );
        // A Writer that needs three cycles per Chunk.
        let slow = WriterConfig {
            cycles_per_chunk: 3,
            ..WriterConfig::default()
        };
        assert_eq!(run(&slow, &chunks).taken, vec![0, 3, 6, 9]);
    }

    #[test]
    fn each_line_goes_to_its_home_bank() {
        // Lines 4 and 7 of a 2x2 mesh live on tiles 0 and 3, OP's own and the far corner (2
        // hops): line 4's five flits and its acknowledgement cross no link, line 7's cross two
        // each way, 12 flit-hops.
        let r = run(
            &WriterConfig::default(),
            &[(0, filling(1, 4, 1, false)), (0, filling(1, 7, 1, true))],
        );
        assert_eq!((r.writes, r.flit_hops), (2, 12));
        // Lines 5 and 6, on tiles 1 and 2, one hop each: 6 flit-hops each.
        let r = run(&WriterConfig::default(), &[(0, filling(1, 5, 2, true))]);
        assert_eq!((r.writes, r.flit_hops), (2, 12));
        let r = run(&WriterConfig::default(), &[(0, filling(1, 4, 4, true))]);
        assert_eq!((r.writes, r.flit_hops), (4, 24));
    }

    #[test]
    fn waiting_line_writes_hold_back_chunks() {
        // A Chunk causing five line writes: the two Block Buffer ports write two lines a
        // cycle from the next one on; while more than two writes wait the Writer takes no
        // Chunk, so the next one goes in at cycle 2, not 1.
        let r = run(
            &WriterConfig::default(),
            &[(0, filling(1, 0, 5, false)), (0, Chunk::default())],
        );
        assert_eq!(r.taken, vec![0, 2]);
        assert_eq!(
            (r.stats.lines, r.stats.port_stall_cycles, r.writes),
            (5, 2, 5)
        );
        assert_eq!(r.stats.write_backlog_stall_cycles, 0);
    }

    #[test]
    fn a_message_completes_when_its_last_write_has_issued() {
        // Message 1 ends with a Chunk of three line writes taken at cycle 0: two issue at
        // cycle 1, the third at 2, and the message completes then. Message 2's last Chunk
        // writes nothing but is taken behind them (cycle 1): it completes with them, at 2.
        // Message 3's, taken at 10 with no write waiting, completes at once.
        let chunks = [
            (0, filling(1, 0, 3, true)),
            (0, filling(2, 8, 0, true)),
            (10, filling(3, 16, 0, true)),
        ];
        let r = run(&WriterConfig::default(), &chunks);
        assert_eq!(r.taken, vec![0, 1, 10]);
        assert_eq!(r.completed, vec![(2, 1), (2, 2), (10, 3)]);
    }
}
