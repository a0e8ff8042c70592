//! Gzip known by its first bytes, not by a file name: LangChain keeps its
//! cassettes as `.yaml.gz`, rotated logs are `.jsonl.gz`, and a pipe has
//! no name at all. Decompressed as it is read, so the line and size
//! limits of what reads it bound it too (a 1 MB `.gz` was inflated whole
//! to 3.2 GB; issue 23, item 9).

use std::io::BufRead;
#[cfg(feature = "gzip")]
use std::io::{BufReader, Read};

/// The two bytes every gzip member starts with.
const GZIP: &[u8] = &[0x1f, 0x8b];

/// `reader` as text: decompressed on the way when it is gzip (`true`).
pub fn decoded(
    mut reader: Box<dyn BufRead + Send>,
) -> std::io::Result<(Box<dyn BufRead + Send>, bool)> {
    if reader.fill_buf()?.starts_with(GZIP) {
        #[cfg(feature = "gzip")]
        {
            let gz = Gunzip(flate2::bufread::MultiGzDecoder::new(reader));
            return Ok((Box::new(BufReader::with_capacity(1 << 16, gz)), true));
        }
        #[cfg(not(feature = "gzip"))]
        return Err(std::io::Error::other(
            "the input is gzip-compressed, and this loopdbg was built without the `gzip` feature that reads it",
        ));
    }
    Ok((reader, false))
}

/// A gzip stream whose errors say they are the compression's.
#[cfg(feature = "gzip")]
struct Gunzip<R>(flate2::bufread::MultiGzDecoder<R>);

#[cfg(feature = "gzip")]
impl<R: BufRead> Read for Gunzip<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0
            .read(buf)
            .map_err(|e| std::io::Error::new(e.kind(), format!("the gzip stream is damaged: {e}")))
    }
}

#[cfg(all(test, feature = "gzip"))]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn gzip_is_known_by_its_bytes_and_damage_is_named() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"{\"a\":1}\n").unwrap();
        let bytes = gz.finish().unwrap();
        let (mut text, was) = decoded(Box::new(std::io::Cursor::new(bytes.clone()))).unwrap();
        assert!(was);
        let mut out = String::new();
        text.read_to_string(&mut out).unwrap();
        assert_eq!(out, "{\"a\":1}\n");
        let (_, was) = decoded(Box::new(std::io::Cursor::new(b"{}".to_vec()))).unwrap();
        assert!(!was);
        let cut = bytes[..bytes.len() - 6].to_vec();
        let (mut text, _) = decoded(Box::new(std::io::Cursor::new(cut))).unwrap();
        let e = text.read_to_string(&mut out).unwrap_err();
        assert!(
            e.to_string().starts_with("the gzip stream is damaged"),
            "{e}"
        );
    }
}
