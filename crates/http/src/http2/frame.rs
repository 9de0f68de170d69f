//! HTTP/2 frame layout (RFC 9113 sections 4 and 6): the 9-byte header, payload checks that do
//! not depend on connection state, and writing the frames a client sends.

pub(crate) const DATA: u8 = 0x0;
pub(crate) const HEADERS: u8 = 0x1;
pub(crate) const PRIORITY: u8 = 0x2;
pub(crate) const RST_STREAM: u8 = 0x3;
pub(crate) const SETTINGS: u8 = 0x4;
pub(crate) const PUSH_PROMISE: u8 = 0x5;
pub(crate) const PING: u8 = 0x6;
pub(crate) const GOAWAY: u8 = 0x7;
pub(crate) const WINDOW_UPDATE: u8 = 0x8;
pub(crate) const CONTINUATION: u8 = 0x9;

pub(crate) const END_STREAM: u8 = 0x1;
pub(crate) const ACK: u8 = 0x1;
pub(crate) const END_HEADERS: u8 = 0x4;
pub(crate) const PADDED: u8 = 0x8;
pub(crate) const PRIORITY_FLAG: u8 = 0x20;

/// SETTINGS identifiers (RFC 9113 section 6.5.2).
pub(crate) const HEADER_TABLE_SIZE: u16 = 0x1;
pub(crate) const ENABLE_PUSH: u16 = 0x2;
pub(crate) const MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub(crate) const INITIAL_WINDOW_SIZE: u16 = 0x4;
pub(crate) const MAX_FRAME_SIZE: u16 = 0x5;

/// Error codes (RFC 9113 section 7).
pub(crate) const PROTOCOL_ERROR: u32 = 0x1;
pub(crate) const FLOW_CONTROL_ERROR: u32 = 0x3;
pub(crate) const FRAME_SIZE_ERROR: u32 = 0x6;
pub(crate) const CANCEL: u32 = 0x8;
pub(crate) const COMPRESSION_ERROR: u32 = 0x9;
pub(crate) const ENHANCE_YOUR_CALM: u32 = 0xb;

/// The name of an error code, for messages.
pub(crate) fn code_name(code: u32) -> &'static str {
    match code {
        0x0 => "NO_ERROR",
        0x1 => "PROTOCOL_ERROR",
        0x2 => "INTERNAL_ERROR",
        0x3 => "FLOW_CONTROL_ERROR",
        0x4 => "SETTINGS_TIMEOUT",
        0x5 => "STREAM_CLOSED",
        0x6 => "FRAME_SIZE_ERROR",
        0x7 => "REFUSED_STREAM",
        0x8 => "CANCEL",
        0x9 => "COMPRESSION_ERROR",
        0xa => "CONNECT_ERROR",
        0xb => "ENHANCE_YOUR_CALM",
        0xc => "INADEQUATE_SECURITY",
        0xd => "HTTP_1_1_REQUIRED",
        _ => "an unknown error code",
    }
}

/// The connection preface a client sends first (RFC 9113 section 3.4).
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The largest frame payload crest accepts: the default SETTINGS_MAX_FRAME_SIZE, which it
/// does not raise.
pub(crate) const MAX_PAYLOAD: usize = 16_384;

/// The largest window (RFC 9113 section 6.9.1).
pub(crate) const MAX_WINDOW: i64 = (1 << 31) - 1;

/// A frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl Head {
    /// Reads a header from the first 9 bytes of `b`, if there are 9. The stream identifier's
    /// reserved bit is ignored, as the RFC asks.
    pub(crate) fn parse(b: &[u8]) -> Option<Head> {
        let h: &[u8; 9] = b.get(..9)?.try_into().ok()?;
        Some(Head {
            len: (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]),
            kind: h[3],
            flags: h[4],
            stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
        })
    }
}

/// Appends a frame header.
pub(crate) fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// Appends a whole frame.
pub(crate) fn put_frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    put_head(out, payload.len(), kind, flags, stream);
    out.extend_from_slice(payload);
}

/// Why a payload is malformed, whatever the connection's state: a connection error.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) struct Malformed {
    pub code: u32,
    pub what: &'static str,
}

/// The payload of a DATA or HEADERS frame without its padding (RFC 9113 sections 6.1, 6.2).
pub(crate) fn unpad(flags: u8, payload: &[u8]) -> Result<&[u8], Malformed> {
    if flags & PADDED == 0 {
        return Ok(payload);
    }
    let bad = Malformed {
        code: PROTOCOL_ERROR,
        what: "padding longer than the frame",
    };
    let (&pad, rest) = payload.split_first().ok_or(bad)?;
    rest.len()
        .checked_sub(usize::from(pad))
        .map(|end| &rest[..end])
        .ok_or(bad)
}

/// The header block fragment of a HEADERS frame: without padding and priority fields.
pub(crate) fn header_fragment(flags: u8, payload: &[u8]) -> Result<&[u8], Malformed> {
    let b = unpad(flags, payload)?;
    if flags & PRIORITY_FLAG == 0 {
        return Ok(b);
    }
    b.get(5..).ok_or(Malformed {
        code: FRAME_SIZE_ERROR,
        what: "HEADERS too short for its priority fields",
    })
}

/// A 4-byte payload as a number (RST_STREAM's code, WINDOW_UPDATE's increment without its
/// reserved bit is the caller's job).
pub(crate) fn u32_payload(payload: &[u8], what: &'static str) -> Result<u32, Malformed> {
    let b: [u8; 4] = payload.try_into().map_err(|_| Malformed {
        code: FRAME_SIZE_ERROR,
        what,
    })?;
    Ok(u32::from_be_bytes(b))
}

/// The settings in a SETTINGS payload, as (identifier, value).
pub(crate) fn settings(payload: &[u8]) -> Result<impl Iterator<Item = (u16, u32)> + '_, Malformed> {
    if !payload.len().is_multiple_of(6) {
        return Err(Malformed {
            code: FRAME_SIZE_ERROR,
            what: "SETTINGS length not a multiple of 6",
        });
    }
    Ok(payload.chunks_exact(6).map(|c| {
        (
            u16::from_be_bytes([c[0], c[1]]),
            u32::from_be_bytes([c[2], c[3], c[4], c[5]]),
        )
    }))
}

/// GOAWAY's last stream identifier and error code.
pub(crate) fn goaway(payload: &[u8]) -> Result<(u32, u32), Malformed> {
    if payload.len() < 8 {
        return Err(Malformed {
            code: FRAME_SIZE_ERROR,
            what: "GOAWAY shorter than 8 bytes",
        });
    }
    let last = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & 0x7fff_ffff;
    let code = u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
    Ok((last, code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips_and_ignores_the_reserved_bit() {
        let mut out = Vec::new();
        put_head(&mut out, 0x01_02_03, HEADERS, END_HEADERS | END_STREAM, 0x7fff_fffe);
        assert_eq!(out, [1, 2, 3, 1, 5, 0x7f, 0xff, 0xff, 0xfe]);
        let h = Head::parse(&out).unwrap();
        assert_eq!(
            h,
            Head {
                len: 0x01_02_03,
                kind: HEADERS,
                flags: 5,
                stream: 0x7fff_fffe
            }
        );
        out[5] |= 0x80;
        assert_eq!(Head::parse(&out).unwrap().stream, 0x7fff_fffe);
        assert_eq!(Head::parse(&out[..8]), None, "a truncated header is not a header");
    }

    #[test]
    fn padding_is_stripped_and_bad_padding_is_a_protocol_error() {
        assert_eq!(unpad(0, b"abc").unwrap(), b"abc");
        assert_eq!(unpad(PADDED, b"\x02abcXY").unwrap(), b"abc");
        assert_eq!(unpad(PADDED, b"\x00").unwrap(), b"");
        assert_eq!(unpad(PADDED, b"\x05ab").unwrap_err().code, PROTOCOL_ERROR);
        assert_eq!(unpad(PADDED, b"").unwrap_err().code, PROTOCOL_ERROR);
        assert_eq!(
            header_fragment(PADDED | PRIORITY_FLAG, b"\x01\0\0\0\x03\x10blockP").unwrap(),
            b"block"
        );
        assert_eq!(
            header_fragment(PRIORITY_FLAG, b"\0\0\0").unwrap_err().code,
            FRAME_SIZE_ERROR
        );
    }

    #[test]
    fn fixed_size_payloads_are_checked() {
        assert_eq!(u32_payload(&[0, 0, 0, 11], "x").unwrap(), 11);
        assert_eq!(u32_payload(&[0, 0, 11], "x").unwrap_err().code, FRAME_SIZE_ERROR);
        assert_eq!(goaway(&[0x80, 0, 0, 7, 0, 0, 0, 2, b'd']).unwrap(), (7, 2));
        assert_eq!(goaway(&[0, 0, 0, 7, 0, 0, 0]).unwrap_err().code, FRAME_SIZE_ERROR);
        let s: Vec<_> = settings(&[0, 3, 0, 0, 0, 100, 0, 4, 0, 1, 0, 0]).unwrap().collect();
        assert_eq!(s, [(MAX_CONCURRENT_STREAMS, 100), (INITIAL_WINDOW_SIZE, 65_536)]);
        assert!(settings(&[0, 3, 0]).is_err());
    }
}
