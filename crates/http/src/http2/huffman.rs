//! HPACK's Huffman code (RFC 7541 section 5.2 and Appendix B), decoding only: crest sends its
//! own strings as they are, and only servers' strings come Huffman-coded.
//!
//! The code is canonical (codes of one length are consecutive, in symbol order, and each length
//! continues where the shorter one stopped), so the code lengths of Appendix B are all the data
//! needed: for each length, the first code and how many there are. Decoding compares the next 32
//! bits against each length's upper bound, shortest first; the common symbols are 5 to 8 bits,
//! so most symbols take a few comparisons and no table walk.

/// The code length of each symbol, 0 to 255 and EOS (256), from RFC 7541 Appendix B.
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28,
    28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12,
    10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6,
    5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22,
    22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20,
    22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28,
    27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28,
    27, 27, 27, 27, 27, 26, 30,
];

const EOS: u16 = 256;

/// The canonical code's shape, computed once at compile time from [`LENGTHS`].
struct Code {
    /// Symbols ordered by (length, symbol): the order their codes are assigned in.
    symbols: [u16; 257],
    /// For each length, the index in `symbols` of its first symbol.
    offset: [u16; 31],
    /// For each length, its first code.
    first: [u32; 31],
    /// For each length, one past its last code, shifted to the left of 32 bits: a 32-bit window
    /// below it starts with a code of this length (or a shorter one, tried first).
    limit: [u64; 31],
}

const CODE: Code = build();

const fn build() -> Code {
    let mut c = Code {
        symbols: [0; 257],
        offset: [0; 31],
        first: [0; 31],
        limit: [0; 31],
    };
    let mut n = 0;
    let mut code: u32 = 0;
    let mut len = 1;
    while len <= 30 {
        c.offset[len] = n as u16;
        c.first[len] = code;
        let mut s = 0;
        while s < 257 {
            if LENGTHS[s] as usize == len {
                c.symbols[n] = s as u16;
                n += 1;
                code += 1;
            }
            s += 1;
        }
        c.limit[len] = (code as u64) << (32 - len);
        code <<= 1;
        len += 1;
    }
    c
}

/// Why a Huffman string is not valid.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BadHuffman;

/// Decodes `src`, appending to `out`. Padding longer than 7 bits, padding that is not the
/// start of EOS, and an EOS symbol are errors (RFC 7541 section 5.2).
pub(crate) fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), BadHuffman> {
    let mut acc: u64 = 0;
    let mut bits: u32 = 0;
    let mut i = 0;
    loop {
        while bits <= 56 && i < src.len() {
            acc = (acc << 8) | u64::from(src[i]);
            bits += 8;
            i += 1;
        }
        if bits == 0 {
            return Ok(());
        }
        // The next 32 bits, left-aligned; zeros past the end.
        let window = if bits >= 32 {
            (acc >> (bits - 32)) as u32
        } else {
            ((acc << (32 - bits)) & 0xffff_ffff) as u32
        };
        let mut len = 5;
        loop {
            if u64::from(window) < CODE.limit[len] {
                break;
            }
            len += 1;
            if len > 30 {
                return Err(BadHuffman);
            }
        }
        if len as u32 > bits {
            // Only padding is left: up to 7 bits, all ones (the start of EOS).
            let mask = (1u64 << bits) - 1;
            if bits <= 7 && acc & mask == mask && i == src.len() {
                return Ok(());
            }
            return Err(BadHuffman);
        }
        let code = window >> (32 - len);
        let sym = CODE.symbols[(u32::from(CODE.offset[len]) + code - CODE.first[len]) as usize];
        if sym == EOS {
            return Err(BadHuffman);
        }
        out.push(sym as u8);
        bits -= len as u32;
        acc &= (1u64 << bits) - 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http2::unhex;

    fn dec(hex: &str) -> Result<Vec<u8>, BadHuffman> {
        let mut out = Vec::new();
        decode(&unhex(hex), &mut out).map(|()| out)
    }

    #[test]
    fn decodes_the_rfc_7541_examples() {
        assert_eq!(dec("f1e3 c2e5 f23a 6ba0 ab90 f4ff").unwrap(), b"www.example.com");
        assert_eq!(dec("a8eb 1064 9cbf").unwrap(), b"no-cache");
        assert_eq!(dec("25a8 49e9 5ba9 7d7f").unwrap(), b"custom-key");
        assert_eq!(dec("6402").unwrap(), b"302");
        assert_eq!(dec("aec3 771a 4b").unwrap(), b"private");
        assert_eq!(
            dec("d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff").unwrap(),
            b"Mon, 21 Oct 2013 20:13:21 GMT"
        );
        assert_eq!(
            dec("9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3").unwrap(),
            b"https://www.example.com"
        );
        assert_eq!(dec("").unwrap(), b"");
    }

    #[test]
    fn every_symbol_round_trips_through_its_own_code() {
        // Encodes each byte with the canonical code rebuilt here bit by bit, then decodes.
        for sym in 0..256u16 {
            let len = LENGTHS[sym as usize] as usize;
            let idx = CODE.symbols.iter().position(|&s| s == sym).unwrap() as u32;
            let code = CODE.first[len] + idx - u32::from(CODE.offset[len]);
            // The code, then ones as padding to a byte boundary.
            let pad = (8 - len % 8) % 8;
            let total = len + pad;
            let value: u64 = (u64::from(code) << pad) | ((1u64 << pad) - 1);
            let bytes: Vec<u8> = (0..total / 8).rev().map(|k| (value >> (8 * k)) as u8).collect();
            let mut out = Vec::new();
            decode(&bytes, &mut out).unwrap();
            assert_eq!(out, [sym as u8], "symbol {sym}");
        }
    }

    #[test]
    fn bad_padding_and_eos_are_errors() {
        // "0" is 00000 (5 bits): three ones of padding are fine, zeros are not.
        assert_eq!(dec("07").unwrap(), b"0");
        assert_eq!(dec("00"), Err(BadHuffman), "padding of zeros");
        // A whole byte of ones is padding longer than 7 bits.
        assert_eq!(dec("ff"), Err(BadHuffman));
        assert_eq!(dec("07ff"), Err(BadHuffman));
        // EOS itself (30 ones) encoded, then padding.
        assert_eq!(dec("ffff ffff"), Err(BadHuffman));
    }
}
