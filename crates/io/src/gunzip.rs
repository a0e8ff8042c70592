//! Gzip known by its first bytes, not by a file name: LangChain keeps its
//! cassettes as `.yaml.gz`, rotated logs are `.jsonl.gz`, and a pipe has
//! no name at all. Decompressed as it is read, so the line and size
//! limits of what reads it bound it too (a 1 MB `.gz` was inflated whole
//! to 3.2 GB; issue 23, item 9), and refused once it expands past
//! [`MAX_RATIO`] the bytes it came from: what a bounded reader downstream
//! holds whole (a document, a line) is then bounded by the input's size on
//! disk, not by what a crafted member inflates to (a 777 KB `.json.gz`
//! took 15 GB; issue 59, item 1).

use std::io::BufRead;
#[cfg(feature = "gzip")]
use std::io::{BufReader, Read};

/// The two bytes every gzip member starts with.
const GZIP: &[u8] = &[0x1f, 0x8b];

/// How many times its compressed size a gzip stream may expand. Agents'
/// logs, request bodies and recordings compress 3–10× (measured on the
/// fixtures and on real Claude Code logs); deflate reaches 1,032× on runs
/// of one byte, which is what a decompression bomb is made of.
pub const MAX_RATIO: u64 = 32;

/// What any gzip stream may expand to, whatever its ratio: a small member
/// of repeated lines is not a bomb.
pub const RATIO_FLOOR: u64 = 16 << 20;

/// `reader` as text: decompressed on the way when it is gzip (`true`).
pub fn decoded(
    reader: Box<dyn BufRead + Send>,
) -> std::io::Result<(Box<dyn BufRead + Send>, bool)> {
    decoded_with_floor(reader, RATIO_FLOOR)
}

/// [`decoded`], with the size any stream may expand to given.
fn decoded_with_floor(
    mut reader: Box<dyn BufRead + Send>,
    #[cfg_attr(not(feature = "gzip"), allow(unused_variables))] floor: u64,
) -> std::io::Result<(Box<dyn BufRead + Send>, bool)> {
    if reader.fill_buf()?.starts_with(GZIP) {
        #[cfg(feature = "gzip")]
        {
            let counted = Counted {
                inner: reader,
                read: 0,
            };
            let gz = Gunzip {
                decoder: flate2::bufread::MultiGzDecoder::new(counted),
                written: 0,
                floor,
            };
            return Ok((Box::new(BufReader::with_capacity(1 << 16, gz)), true));
        }
        #[cfg(not(feature = "gzip"))]
        return Err(std::io::Error::other(
            "the input is gzip-compressed, and this loopdbg was built without the `gzip` feature that reads it",
        ));
    }
    Ok((reader, false))
}

/// A gzip stream whose errors say they are the compression's, refused
/// when it expands past [`MAX_RATIO`].
#[cfg(feature = "gzip")]
struct Gunzip<R> {
    decoder: flate2::bufread::MultiGzDecoder<Counted<R>>,
    /// Decompressed bytes handed out so far.
    written: u64,
    /// What it may expand to whatever its ratio ([`RATIO_FLOOR`]).
    floor: u64,
}

#[cfg(feature = "gzip")]
impl<R: BufRead> Read for Gunzip<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.decoder.read(buf).map_err(|e| {
            std::io::Error::new(e.kind(), format!("the gzip stream is damaged: {e}"))
        })?;
        self.written += n as u64;
        let read = self.decoder.get_ref().read;
        if self.written > self.floor.max(read.saturating_mul(MAX_RATIO)) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "the gzip stream expands more than {MAX_RATIO}× ({} MiB from {} KiB so far): no agent's log or \
                     recording compresses so well, so it is refused as a decompression bomb; to read it anyway, \
                     decompress it first (`gunzip -c FILE | loopdbg check -`)",
                    self.written >> 20,
                    read >> 10
                ),
            ));
        }
        Ok(n)
    }
}

/// A reader that counts what is taken from it: the compressed side.
#[cfg(feature = "gzip")]
struct Counted<R> {
    inner: R,
    read: u64,
}

#[cfg(feature = "gzip")]
impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

#[cfg(feature = "gzip")]
impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.read += amount as u64;
        self.inner.consume(amount);
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

    #[test]
    fn a_stream_that_expands_past_the_ratio_is_refused_and_one_below_is_read() {
        let zeros = |n: usize| {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            gz.write_all(&vec![b'0'; n]).unwrap();
            gz.finish().unwrap()
        };
        // A floor of 1 MiB here (16 MiB in use) keeps the test quick.
        let floor = 1 << 20;
        let open =
            |bytes: Vec<u8>| decoded_with_floor(Box::new(std::io::Cursor::new(bytes)), floor);
        // Under the floor: read whatever its ratio.
        let (mut text, _) = open(zeros(floor as usize - 1)).unwrap();
        assert_eq!(
            std::io::copy(&mut text, &mut std::io::sink()).unwrap(),
            floor - 1
        );
        // Past it, at about 1,000×: refused, saying how to read it anyway.
        let (mut text, _) = open(zeros(2 * floor as usize)).unwrap();
        let e = std::io::copy(&mut text, &mut std::io::sink()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("expands more than 32×"), "{e}");
        assert!(e.to_string().contains("gunzip -c"), "{e}");
        // Text that does not repeat (about 2× here) is read at any size.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let mut state = 1u64;
        for _ in 0..(2 * floor as usize) / 8 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            gz.write_all(format!("{:08x}", state >> 40).as_bytes())
                .unwrap();
        }
        let varied = gz.finish().unwrap();
        let (mut text, _) = open(varied).unwrap();
        assert!(std::io::copy(&mut text, &mut std::io::sink()).unwrap() > floor);
    }
}
