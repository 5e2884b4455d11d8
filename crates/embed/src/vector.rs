//! Portable vectors: one signed byte per dimension, and sign codes for the index.

/// Bits of a [`Code`]: enough that the Hamming distance estimates the angle within a few
/// degrees, small enough that a million codes take 32 MB.
pub const CODE_BITS: usize = 256;
/// Bytes of a [`Code`] as stored.
pub const CODE_BYTES: usize = CODE_BITS / 8;
const CODE_WORDS: usize = CODE_BITS / 64;

/// The sign bits of [`CODE_BITS`] random projections of a vector (SimHash): two vectors at an
/// angle θ differ in about θ/π of the bits, whatever their dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Code(pub [u64; CODE_WORDS]);

impl Code {
    /// The code of `vector` (any dimension; a zero vector gets all bits clear). The
    /// projections are fixed ±1 entries derived from the dimension's number, so every process
    /// computes the same code.
    pub fn of(vector: &[f32]) -> Code {
        let mut sums = [0f32; CODE_BITS];
        for (dimension, &value) in vector.iter().enumerate() {
            if value == 0.0 {
                continue;
            }
            for word in 0..CODE_WORDS {
                let signs = splitmix64(((dimension as u64) << 3) ^ word as u64 ^ 0x7E1A_7ED0);
                let sums = &mut sums[word * 64..(word + 1) * 64];
                for (bit, sum) in sums.iter_mut().enumerate() {
                    if signs >> bit & 1 == 1 {
                        *sum += value;
                    } else {
                        *sum -= value;
                    }
                }
            }
        }
        let mut code = [0u64; CODE_WORDS];
        for (bit, sum) in sums.iter().enumerate() {
            if *sum > 0.0 {
                code[bit / 64] |= 1 << (bit % 64);
            }
        }
        Code(code)
    }

    /// Bits that differ from `other`'s.
    pub fn distance(&self, other: &Code) -> u32 {
        self.0
            .iter()
            .zip(other.0.iter())
            .map(|(a, b)| (a ^ b).count_ones())
            .sum()
    }

    /// The stored form: [`CODE_BYTES`] bytes, little-endian words.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.0.iter().flat_map(|word| word.to_le_bytes()).collect()
    }

    /// The code stored as `bytes`; `None` when they are not [`CODE_BYTES`] long.
    pub fn from_bytes(bytes: &[u8]) -> Option<Code> {
        if bytes.len() != CODE_BYTES {
            return None;
        }
        let mut code = [0u64; CODE_WORDS];
        for (word, chunk) in code.iter_mut().zip(bytes.chunks_exact(8)) {
            *word = u64::from_le_bytes(chunk.try_into().ok()?);
        }
        Some(Code(code))
    }
}

/// A well-mixed 64-bit hash of `x` (SplitMix64's finalizer).
pub(crate) fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `vector` as one signed byte per dimension, scaled so that its largest component is ±127
/// (cosine does not depend on the scale). Not-a-number components count as 0.
pub fn quantize(vector: &[f32]) -> Vec<u8> {
    let largest = vector
        .iter()
        .filter(|v| v.is_finite())
        .fold(0f32, |max, v| max.max(v.abs()));
    if largest == 0.0 {
        return vec![0; vector.len()];
    }
    let scale = 127.0 / largest;
    vector
        .iter()
        .map(|v| {
            let v = if v.is_finite() { *v } else { 0.0 };
            (v * scale).round().clamp(-127.0, 127.0) as i8 as u8
        })
        .collect()
}

/// The cosine similarity of two quantized vectors ([`quantize`]), in −1–1; 0 when either is
/// zero or their dimensions differ.
pub fn cosine(a: &[u8], b: &[u8]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut aa, mut bb) = (0i64, 0i64, 0i64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (i64::from(*x as i8), i64::from(*y as i8));
        dot += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0 || bb == 0 {
        return 0.0;
    }
    (dot as f64 / ((aa as f64).sqrt() * (bb as f64).sqrt())) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact_cosine(a: &[f32], b: &[f32]) -> f32 {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
        dot / (na * nb)
    }

    fn pseudo_vector(seed: u64, dims: usize) -> Vec<f32> {
        (0..dims)
            .map(|i| (splitmix64(seed * 10_000 + i as u64) % 2001) as f32 / 1000.0 - 1.0)
            .collect()
    }

    #[test]
    fn quantized_cosine_is_close_to_the_exact_one() {
        for seed in 0..20 {
            let a = pseudo_vector(seed, 384);
            let mut b = pseudo_vector(seed + 100, 384);
            // Half of a in b: a clearly positive similarity.
            for (x, y) in b.iter_mut().zip(&a) {
                *x = 0.5 * *x + *y;
            }
            let exact = exact_cosine(&a, &b);
            let quantized = cosine(&quantize(&a), &quantize(&b));
            assert!((exact - quantized).abs() < 0.01, "{exact} vs {quantized}");
        }
        assert_eq!(quantize(&[0.5, -1.0, 0.0]), vec![64, (-127i8) as u8, 0]);
        assert_eq!(quantize(&[f32::NAN, 2.0]), vec![0, 127]);
        assert_eq!(cosine(&quantize(&[0.0, 0.0]), &quantize(&[1.0, 0.0])), 0.0);
        assert_eq!(cosine(&[1, 2], &[1, 2, 3]), 0.0);
    }

    #[test]
    fn code_distance_follows_the_angle() {
        let a = pseudo_vector(1, 1536);
        let near: Vec<f32> = a
            .iter()
            .zip(pseudo_vector(2, 1536))
            .map(|(x, y)| x + 0.3 * y)
            .collect();
        let far = pseudo_vector(3, 1536);
        let (ca, cn, cf) = (Code::of(&a), Code::of(&near), Code::of(&far));
        assert_eq!(ca.distance(&ca), 0);
        // cos ≈ 0.96 (16°): about 23 bits of 256; unrelated (90°): about 128.
        assert!(ca.distance(&cn) < 50, "{}", ca.distance(&cn));
        assert!(ca.distance(&cf) > 90, "{}", ca.distance(&cf));
        // Scale does not change the code; the negation flips every bit.
        let doubled: Vec<f32> = a.iter().map(|x| 2.0 * x).collect();
        assert_eq!(Code::of(&doubled), ca);
        let negated: Vec<f32> = a.iter().map(|x| -x).collect();
        assert_eq!(ca.distance(&Code::of(&negated)), CODE_BITS as u32);
    }

    #[test]
    fn codes_round_trip_through_bytes() {
        let code = Code::of(&pseudo_vector(9, 64));
        let bytes = code.to_bytes();
        assert_eq!(bytes.len(), CODE_BYTES);
        assert_eq!(Code::from_bytes(&bytes), Some(code));
        assert_eq!(Code::from_bytes(&bytes[1..]), None);
    }
}
