//! The input of a scripted fuzz target, read one step at a time.

/// A fuzz input read as a script: a byte at a time, or a run of bytes.
pub struct Script<'a>(pub &'a [u8]);

impl Script<'_> {
    /// The next byte, if any is left.
    pub fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    /// The next `n` bytes, or as many as are left.
    pub fn bytes(&mut self, n: usize) -> &[u8] {
        let (a, b) = self.0.split_at(n.min(self.0.len()));
        self.0 = b;
        a
    }
}
