//! Gzip for a stored page whose nonce changes per response, without compressing it per
//! response.
//!
//! Deflate data can be spliced: each piece between nonces is compressed once, on its own,
//! ending with a sync flush (byte-aligned and not final); per response the fresh nonce goes
//! between the pieces as a stored (uncompressed) block, and an empty final block closes the
//! stream. Only the gzip trailer's CRC-32 is computed per response, which costs a small
//! fraction of compressing the page.

use axum::body::Bytes;
use flate2::{Compress, CompressError, Compression, Crc, FlushCompress};

/// Member header: magic, deflate, no flags, no mtime, no extra flags, unknown OS.
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
/// An empty stored block with the final bit set.
const FINAL_BLOCK: [u8; 5] = [1, 0, 0, 0xff, 0xff];

/// A page's pieces, each deflated once.
pub struct SplicedGzip {
    deflated: Vec<Vec<u8>>,
}

impl SplicedGzip {
    pub fn new(pieces: &[Bytes]) -> Result<SplicedGzip, CompressError> {
        let deflated = pieces
            .iter()
            .map(|piece| deflate_flushed(piece))
            .collect::<Result<_, _>>()?;
        Ok(SplicedGzip { deflated })
    }

    /// The gzip member of `pieces` joined by `nonce`; `pieces` are the ones given to `new`.
    pub fn with_nonce(&self, pieces: &[Bytes], nonce: &[u8]) -> Vec<u8> {
        let size = self.deflated.iter().map(Vec::len).sum::<usize>();
        let mut out = Vec::with_capacity(HEADER.len() + size + (nonce.len() + 5) * pieces.len() + 13);
        out.extend_from_slice(&HEADER);
        let mut crc = Crc::new();
        for (i, (deflated, plain)) in self.deflated.iter().zip(pieces).enumerate() {
            if i > 0 {
                stored_block(&mut out, nonce);
                crc.update(nonce);
            }
            out.extend_from_slice(deflated);
            crc.update(plain);
        }
        out.extend_from_slice(&FINAL_BLOCK);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out.extend_from_slice(&crc.amount().to_le_bytes());
        out
    }
}

/// Raw deflate of `text`, ended by a sync flush so more blocks may follow it.
fn deflate_flushed(text: &[u8]) -> Result<Vec<u8>, CompressError> {
    let mut compressor = Compress::new(Compression::default(), false);
    let mut out = Vec::with_capacity(text.len() / 4 + 64);
    loop {
        let consumed = (compressor.total_in() as usize).min(text.len());
        compressor.compress_vec(&text[consumed..], &mut out, FlushCompress::Sync)?;
        // The flush is complete once all input is taken and the output was not filled up.
        if compressor.total_in() as usize == text.len() && out.len() < out.capacity() {
            return Ok(out);
        }
        out.reserve(out.capacity().max(1024));
    }
}

/// A non-final stored block holding `data` (a nonce: far below the 65,535-byte limit).
fn stored_block(out: &mut Vec<u8>, data: &[u8]) {
    let len = u16::try_from(data.len()).unwrap_or(u16::MAX);
    out.push(0);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&(!len).to_le_bytes());
    out.extend_from_slice(&data[..usize::from(len)]);
}

#[cfg(test)]
pub(super) mod tests {
    use std::io::Read;

    use super::*;

    /// The bytes a gzip stream decompresses to.
    pub(in crate::page_cache) fn gunzip(data: &[u8]) -> Vec<u8> {
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(data)
            .read_to_end(&mut plain)
            .expect("a valid gzip member");
        plain
    }

    #[test]
    fn spliced_pages_decompress_to_the_page_with_each_nonce() {
        let page: String = (0..2_000).map(|i| format!("<tr><td>row {i}</td></tr>")).collect();
        let text = format!("<script nonce=\"OLD\">x</script>{page}<script nonce=\"OLD\"></script>OLD");
        let pieces: Vec<Bytes> = text
            .split("OLD")
            .map(|p| Bytes::copy_from_slice(p.as_bytes()))
            .collect();
        let gzip = SplicedGzip::new(&pieces).expect("deflate");
        for nonce in ["a1b2c3d4e5f6g7h8i9j0kk==", "zz"] {
            let member = gzip.with_nonce(&pieces, nonce.as_bytes());
            assert_eq!(gunzip(&member), text.replace("OLD", nonce).into_bytes());
            assert!(member.len() < text.len() / 5, "the pieces are really compressed");
        }
    }

    #[test]
    fn empty_pieces_and_a_page_without_nonce_work_too() {
        let pieces = [Bytes::new(), Bytes::from_static(b"abc"), Bytes::new()];
        let gzip = SplicedGzip::new(&pieces).expect("deflate");
        assert_eq!(gunzip(&gzip.with_nonce(&pieces, b"N")), b"NabcN");
        let whole = [Bytes::from_static(b"only text")];
        let gzip = SplicedGzip::new(&whole).expect("deflate");
        assert_eq!(gunzip(&gzip.with_nonce(&whole, b"N")), b"only text");
    }
}
