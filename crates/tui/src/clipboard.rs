//! `y`: text to the clipboard through the terminal, as OSC 52 asks
//! (xterm's "manipulate selection data"): it works over ssh and in tmux,
//! where no local clipboard tool would reach the user's machine.

use base64::Engine;

/// Past this many bytes of base64 many terminals drop the sequence (xterm
/// and tmux cap it near 100,000): the text is written to a file instead.
pub const MOST: usize = 74_994;

/// The escape sequence that sets the clipboard to `text`, wrapped for
/// tmux's passthrough when `in_tmux`; `None` when it is too long to send.
pub fn osc52(text: &str, in_tmux: bool) -> Option<String> {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    if encoded.len() > MOST {
        return None;
    }
    let sequence = format!("\x1b]52;c;{encoded}\x07");
    Some(match in_tmux {
        // tmux passes a sequence on when it is wrapped and its escapes doubled.
        true => format!("\x1bPtmux;{}\x1b\\", sequence.replace('\x1b', "\x1b\x1b")),
        false => sequence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_carries_the_text_in_base64() {
        assert_eq!(osc52("hi", false).unwrap(), "\x1b]52;c;aGk=\x07");
        assert_eq!(
            osc52("hi", true).unwrap(),
            "\x1bPtmux;\x1b\x1b]52;c;aGk=\x07\x1b\\"
        );
        assert!(osc52(&"x".repeat(100_000), false).is_none());
    }
}
