//! numpy's `default_rng(seed).permutation(n)`, bit for bit, without numpy.
//!
//! Random placement has always drawn its hosts with numpy; importing
//! `numpy.random` costs 11-20 ms per process, a tenth of a whole streamed
//! 256-rank run. This module redoes the same computation so that every seed keeps
//! its hosts: numpy's `SeedSequence` (pool of four 32-bit words), PCG64 seeded from
//! it (XSL-RR output, 128-bit LCG), and `Generator.shuffle`'s Fisher-Yates with
//! masked rejection sampling (numpy's `random_interval`). Each step follows numpy
//! 2.x's definition, including its quirks (the buffered upper half of a 64-bit
//! draw, the 32/64-bit switch); the tests compare with values numpy produced.

use std::collections::TryReserveError;

// SeedSequence's hashing constants (numpy/random/bit_generator.pyx).
const INIT_A: u32 = 0x43b0_d7e5;
const MULT_A: u32 = 0x931e_8875;
const INIT_B: u32 = 0x8b51_f9dd;
const MULT_B: u32 = 0x58f3_8ded;
const MIX_MULT_L: u32 = 0xca01_f9dd;
const MIX_MULT_R: u32 = 0x4973_f715;
const POOL: usize = 4;

/// PCG64's 128-bit LCG multiplier.
const PCG_MULT: u128 = (2_549_297_995_355_413_924u128 << 64) | 4_865_540_595_714_422_341;

/// The 32-bit words numpy makes of a non-negative integer seed, lowest first,
/// from its little-endian bytes; zero (or no bytes) is the single word 0.
pub fn entropy_words(le_bytes: &[u8]) -> Vec<u32> {
    let mut words: Vec<u32> = le_bytes
        .chunks(4)
        .map(|c| c.iter().rev().fold(0, |w, &b| (w << 8) | b as u32))
        .collect();
    while words.len() > 1 && words.last() == Some(&0) {
        words.pop(); // numpy stops at the highest non-zero word
    }
    if words.is_empty() {
        words.push(0);
    }
    words
}

/// Hash one word; the multiplier advances at every call, as in numpy.
fn hashmix(value: u32, hash_const: &mut u32) -> u32 {
    let mut v = value ^ *hash_const;
    *hash_const = hash_const.wrapping_mul(MULT_A);
    v = v.wrapping_mul(*hash_const);
    v ^ (v >> 16)
}

fn mix(x: u32, y: u32) -> u32 {
    let r = MIX_MULT_L
        .wrapping_mul(x)
        .wrapping_sub(MIX_MULT_R.wrapping_mul(y));
    r ^ (r >> 16)
}

/// `SeedSequence(entropy).generate_state(4, np.uint64)`: the default pool of four
/// words, no spawn key.
pub fn seed_sequence_state(entropy: &[u32]) -> [u64; 4] {
    let mut hc = INIT_A;
    let mut pool = [0u32; POOL];
    for (i, p) in pool.iter_mut().enumerate() {
        *p = hashmix(entropy.get(i).copied().unwrap_or(0), &mut hc);
    }
    // every word into every other, in numpy's order (a source word is read after
    // the earlier steps changed it)
    for src in 0..POOL {
        for dst in 0..POOL {
            if src != dst {
                pool[dst] = mix(pool[dst], hashmix(pool[src], &mut hc));
            }
        }
    }
    for &e in entropy.iter().skip(POOL) {
        for p in pool.iter_mut() {
            *p = mix(*p, hashmix(e, &mut hc));
        }
    }
    // eight 32-bit words cycled from the pool, paired little-endian into four u64
    let mut hc = INIT_B;
    let mut out = [0u64; 4];
    for i in 0..8 {
        let mut v = pool[i % POOL] ^ hc;
        hc = hc.wrapping_mul(MULT_B);
        v = v.wrapping_mul(hc);
        v ^= v >> 16;
        out[i / 2] |= (v as u64) << (32 * (i % 2));
    }
    out
}

/// numpy's PCG64 bit generator (PCG XSL-RR 128/64), with its 32-bit buffer.
#[derive(Clone, Debug)]
pub struct Pcg64 {
    state: u128,
    inc: u128,
    /// The upper half of the last 64-bit draw split for 32-bit draws (numpy's
    /// `has_uint32`/`uinteger`); 64-bit draws leave it alone.
    half: Option<u32>,
}

impl Pcg64 {
    /// As `np.random.default_rng(seed)` seeds it, `entropy` being the seed's
    /// 32-bit words (see [`entropy_words`]).
    pub fn from_seed_sequence(entropy: &[u32]) -> Self {
        let w = seed_sequence_state(entropy);
        let initstate = ((w[0] as u128) << 64) | w[1] as u128;
        let initseq = ((w[2] as u128) << 64) | w[3] as u128;
        // pcg_setseq_128_srandom_r
        let mut rng = Pcg64 {
            state: 0,
            inc: (initseq << 1) | 1,
            half: None,
        };
        rng.step();
        rng.state = rng.state.wrapping_add(initstate);
        rng.step();
        rng
    }

    fn step(&mut self) {
        self.state = self.state.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
    }

    pub fn next_u64(&mut self) -> u64 {
        self.step();
        let (hi, lo) = ((self.state >> 64) as u64, self.state as u64);
        (hi ^ lo).rotate_right((self.state >> 122) as u32)
    }

    /// The low half of a fresh 64-bit draw, then its high half.
    pub fn next_u32(&mut self) -> u32 {
        if let Some(h) = self.half.take() {
            return h;
        }
        let x = self.next_u64();
        self.half = Some((x >> 32) as u32);
        x as u32
    }

    /// Uniform in `0..=max` by masked rejection (numpy's `random_interval`, not
    /// the Lemire method of `Generator.integers`): 32-bit draws while `max` fits
    /// in 32 bits, else 64-bit ones.
    pub fn interval(&mut self, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        let mask = u64::MAX >> max.leading_zeros();
        loop {
            let v = if max <= u32::MAX as u64 {
                self.next_u32() as u64 & mask
            } else {
                self.next_u64() & mask
            };
            if v <= max {
                return v;
            }
        }
    }

    /// `Generator.shuffle` of a 1-D array: Fisher-Yates from the last item down to
    /// the second, swapping item `i` with item `interval(i)`.
    pub fn shuffle<T>(&mut self, xs: &mut [T]) {
        for i in (1..xs.len()).rev() {
            let j = self.interval(i as u64) as usize;
            xs.swap(i, j);
        }
    }

    /// `Generator.permutation(n)`: `0..n` shuffled; an error only when the memory
    /// cannot be had.
    pub fn permutation(&mut self, n: usize) -> Result<Vec<u64>, TryReserveError> {
        let mut xs = Vec::new();
        xs.try_reserve_exact(n)?;
        xs.extend(0..n as u64);
        self.shuffle(&mut xs);
        Ok(xs)
    }
}

#[cfg(test)]
mod tests {
    // Expected values are numpy 2.4's own output (reference values of numpy's
    // generator, recorded once), not results of netsteer's model.
    use super::*;

    fn rng(seed: u128) -> Pcg64 {
        Pcg64::from_seed_sequence(&entropy_words(&seed.to_le_bytes()))
    }

    #[test]
    fn seeds_split_into_words_like_numpy() {
        assert_eq!(entropy_words(&[]), vec![0]);
        assert_eq!(entropy_words(&0u64.to_le_bytes()), vec![0]);
        assert_eq!(entropy_words(&12345u64.to_le_bytes()), vec![12345]);
        assert_eq!(entropy_words(&(1u64 << 32).to_le_bytes()), vec![0, 1]);
        assert_eq!(entropy_words(&[1, 0, 0, 0, 2]), vec![1, 2]);
    }

    #[test]
    fn seed_sequence_matches_numpy() {
        // SeedSequence(seed).generate_state(4, np.uint64); 2**130+7 has five words,
        // more than the pool, so it takes the last mixing loop too
        #[rustfmt::skip]
        let cases: [(u128, [u64; 4]); 3] = [
            (0, [0xdb2cd7e7b0f478be, 0xabf4641a2c71ba49, 0x20c6ed6d9d7b8d41, 0x2c4099de223c39d4]),
            (12345, [0xb5ae6482a03d837c, 0xbbe2996ffa1f7a2f, 0x64e39a9f37158f94, 0x3ebb0f96a013fd73]),
            ((1 << 100) + 3, [0xba00485c0977d4f5, 0xcdb10e7d95efa46a, 0x6c83aecf953b85c9, 0x5327889b3e6230c7]),
        ];
        for (seed, want) in &cases {
            assert_eq!(
                seed_sequence_state(&entropy_words(&seed.to_le_bytes())),
                *want,
                "seed {seed}"
            );
        }
        let mut big = vec![0u8; 17];
        big[0] = 7;
        big[16] = 4; // 2**130 + 7, past u128
        assert_eq!(
            seed_sequence_state(&entropy_words(&big)),
            [
                0xfe5332f1749c1bd9,
                0x3dbf79501db1f308,
                0xe31363413a429fc7,
                0x94897b2642b5264c
            ]
        );
    }

    #[test]
    fn seeding_and_draws_match_numpy() {
        // default_rng(seed).bit_generator.state and .random_raw(3)
        #[rustfmt::skip]
        let cases: [(u128, u128, u128, [u64; 3]); 3] = [
            (0, 0x1aa1b5345996452d09585eb7a69561e3, 0x418ddadb3af71a82588133bc447873a9,
             [0xa30febcfd9c2825f, 0x4510bdf882d9d721, 0x0a7d3da94ecde8b8]),
            (1, 0x9c5b484bfedb756c2a6e7d6f320fbc7e, 0x922af2da2645f895a19857b95740937b,
             [0x8306bdf37922e4ff, 0xf35196bbc152a866, 0x24e7a4f608ec18cd]),
            ((1 << 64) + 7, 0x0b84b3abfdecf35fabf03743fcc4e3b7, 0xba45ffcd4b1d894fa72533e23d36a97b,
             [0xd54af20fba8a1b7d, 0x7bfd7b45cc2acdcd, 0xb9c4e028c0865e46]),
        ];
        for (seed, state, inc, raw) in cases {
            let mut g = rng(seed);
            assert_eq!((g.state, g.inc), (state, inc), "seed {seed}");
            assert_eq!(
                [g.next_u64(), g.next_u64(), g.next_u64()],
                raw,
                "seed {seed}"
            );
        }
        // 32-bit draws: the low half first, then the buffered high half
        let mut g = rng(0);
        assert_eq!(
            [g.next_u32(), g.next_u32(), g.next_u32()],
            [0xd9c2825f, 0xa30febcf, 0x82d9d721]
        );
    }

    #[test]
    #[allow(clippy::type_complexity)]
    fn permutations_match_numpy() {
        // default_rng(seed).permutation(n)[:12], then the generator's state and
        // its 32-bit buffer (has_uint32, uinteger)
        #[rustfmt::skip]
        let cases: [(u128, usize, &[u64], u128, Option<u32>); 4] = [
            (0, 10, &[4, 6, 2, 7, 3, 5, 9, 0, 8, 1], 0x0713825bf6e82250d44730a8ba681acd, None),
            (1, 7, &[5, 0, 1, 4, 2, 6, 3], 0xa3025a22bbfb1d6a6e70f36d6fd4bd55, None),
            (12345, 300, &[92, 293, 226, 200, 258, 23, 160, 186, 169, 284, 112, 256],
             0xc75c9eef430a51a3c44aefdd797b2de8, Some(949558584)),
            ((1 << 64) + 7, 9, &[4, 2, 3, 1, 7, 8, 0, 6, 5], 0xf725d0704686d360de07624d60ba02e5, None),
        ];
        for (seed, n, head, state, half) in cases {
            let mut g = rng(seed);
            let p = g.permutation(n).unwrap();
            assert_eq!(&p[..head.len()], head, "seed {seed}");
            assert_eq!((g.state, g.half), (state, half), "seed {seed}");
        }
        assert!(rng(0).permutation(0).unwrap().is_empty());
        assert_eq!(rng(0).permutation(1).unwrap(), vec![0]);
    }

    #[test]
    fn sixty_four_bit_intervals_match_numpy() {
        // The draws numpy's shuffle makes for its first items of sequences too long
        // to build (recorded through a Sequence whose __getitem__ logs the swaps):
        // past 2**32 - 1 the mask takes 64-bit draws, which leave the 32-bit buffer
        // alone; at 2**32 - 1 it goes back to (buffered) 32-bit draws.
        #[rustfmt::skip]
        let cases: [(u128, u64, &[u64]); 3] = [
            (3, 1 << 40, &[634845577976, 22245528565, 855477447734, 248546461476, 618644508430, 254829865223]),
            (5, (1 << 32) + 2, &[2881021352, 2706834550, 4207022317, 231630602, 1193673359, 1646556805]),
            (7, 1 << 62, &[2307604057237572235, 2715615310603774613, 473817354309663074, 4154339397315733314]),
        ];
        for (seed, n, js) in cases {
            let mut g = rng(seed);
            let got: Vec<u64> = (0..js.len() as u64)
                .map(|k| g.interval(n - 1 - k))
                .collect();
            assert_eq!(got, js, "seed {seed}");
        }
    }
}
