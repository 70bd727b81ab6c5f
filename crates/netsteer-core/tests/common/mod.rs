//! What the random-workload tests share: a seeded generator, the same on every run.

/// xorshift64*, seeded per case.
pub struct Rng(pub u64);

impl Rng {
    /// The generator of case `seed` (a nonzero state spread from the seed).
    pub fn for_case(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// A path of 1 to 4 distinct channels of `0..nch` (at most `nch`), in the order drawn.
    pub fn path(&mut self, nch: usize) -> Vec<u32> {
        let len = 1 + self.below(4.min(nch as u64)) as usize;
        let mut p: Vec<u32> = vec![];
        while p.len() < len {
            let c = self.below(nch as u64) as u32;
            if !p.contains(&c) {
                p.push(c);
            }
        }
        p
    }
}
