//! The raw body kept per feed (F8): its digest, and its compression.
//!
//! zlib (deflate) at level 6: feed XML and JSON shrink to a fifth or less, compressing a
//! 100 KB body takes about a millisecond, and the codec (flate2, pure Rust) is already in the
//! tree through reqwest's decoders. zstd or brotli would save a little more space but would
//! add a C library or cost several times the CPU per fetch, for a copy that is read rarely.

use std::io::{Read, Write};

use flate2::Compression;
use sha2::{Digest, Sha256};

/// The name stored in `feed_bodies.compression` for [`compress`]'s output.
pub const CODEC: &str = "zlib";

/// The largest body kept: the fetch's body limit (5 MB), so a kept body is never larger than
/// what a fetch may bring.
pub const MAX_BODY_BYTES: usize = tidings_fetch::client::DEFAULT_MAX_BODY_BYTES;

/// The largest body [`decompress`] produces ([`MAX_BODY_BYTES`]), so a damaged or hostile row
/// cannot expand without bound.
pub const MAX_DECOMPRESSED_BYTES: u64 = MAX_BODY_BYTES as u64;

/// Hex SHA-256 of `bytes`: the stored body's identity, compared to skip parsing.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Compresses a body with [`CODEC`].
pub fn compress(bytes: &[u8]) -> Vec<u8> {
    let mut encoder =
        flate2::write::ZlibEncoder::new(Vec::with_capacity(bytes.len() / 4), Compression::new(6));
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

/// Why a stored body could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The row names a codec this build does not know.
    #[error("unknown body compression {0:?}")]
    UnknownCodec(String),
    /// The bytes are not a valid stream of the codec.
    #[error("the stored body is damaged: {0}")]
    Damaged(String),
    /// The body expands past [`MAX_DECOMPRESSED_BYTES`].
    #[error("the stored body expands past {MAX_DECOMPRESSED_BYTES} bytes")]
    TooLarge,
}

/// Decompresses a stored body written with `codec` ("zlib", or "none" for raw bytes).
pub fn decompress(codec: &str, bytes: &[u8]) -> Result<Vec<u8>, BodyError> {
    match codec {
        "none" | "identity" => Ok(bytes.to_vec()),
        CODEC => {
            let mut out = Vec::with_capacity(bytes.len() * 4);
            flate2::read::ZlibDecoder::new(bytes)
                .take(MAX_DECOMPRESSED_BYTES + 1)
                .read_to_end(&mut out)
                .map_err(|e| BodyError::Damaged(e.to_string()))?;
            if out.len() as u64 > MAX_DECOMPRESSED_BYTES {
                return Err(BodyError::TooLarge);
            }
            Ok(out)
        }
        other => Err(BodyError::UnknownCodec(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_round_trip_and_shrink() {
        let body = "<rss><channel><item><title>Hello</title></item></channel></rss>".repeat(200);
        let packed = compress(body.as_bytes());
        assert!(packed.len() * 5 < body.len(), "{} bytes", packed.len());
        assert_eq!(decompress(CODEC, &packed).unwrap(), body.as_bytes());
        assert_eq!(decompress("none", b"raw").unwrap(), b"raw");
    }

    #[test]
    fn damaged_and_unknown_bodies_are_errors_not_panics() {
        assert!(matches!(
            decompress(CODEC, b"not zlib at all"),
            Err(BodyError::Damaged(_))
        ));
        assert!(matches!(
            decompress("zstd", b""),
            Err(BodyError::UnknownCodec(_))
        ));
        let bomb = compress(&vec![0u8; (MAX_DECOMPRESSED_BYTES + 10) as usize]);
        assert!(matches!(decompress(CODEC, &bomb), Err(BodyError::TooLarge)));
    }

    #[test]
    fn digests_are_hex_sha256() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
