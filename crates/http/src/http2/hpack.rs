//! HPACK (RFC 7541): decoding servers' header blocks, and encoding crest's requests.
//!
//! Decoding is on the hot path (every response), so it hands each header to a callback as two
//! borrowed slices instead of building a map: a name or value is borrowed from the block itself,
//! the static table, the dynamic table, or a reused scratch buffer for Huffman strings. The only
//! allocation is one per entry inserted into the dynamic table; the caller copies what it keeps.
//!
//! Encoding happens once per distinct request (the caller caches the block), so it is plain:
//! static-table indices where they fit, literals without indexing, no Huffman. crest never
//! inserts into the server's table, so it never has to track it.

use super::huffman;
use std::collections::VecDeque;

/// The static table (RFC 7541 Appendix A), index 1 first.
pub(crate) const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// The dynamic table size crest allows servers (SETTINGS_HEADER_TABLE_SIZE, left at its default).
pub(crate) const TABLE_LIMIT: usize = 4096;

/// Why a header block could not be decoded: a COMPRESSION_ERROR, which ends the connection
/// (the two ends' tables no longer agree).
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) struct BadBlock(pub &'static str);

/// One dynamic-table entry: name and value in one allocation.
struct Entry {
    bytes: Box<[u8]>,
    name_len: usize,
}

impl Entry {
    fn name(&self) -> &[u8] {
        &self.bytes[..self.name_len]
    }
    fn value(&self) -> &[u8] {
        &self.bytes[self.name_len..]
    }
    /// The size the table accounts for it (RFC 7541 section 4.1).
    fn size(&self) -> usize {
        self.bytes.len() + 32
    }
}

/// A connection's decoding state: the dynamic table and scratch space for Huffman strings.
pub(crate) struct Decoder {
    /// Newest first: dynamic index 62 is `table[0]`.
    table: VecDeque<Entry>,
    size: usize,
    max_size: usize,
    name_buf: Vec<u8>,
    value_buf: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max_size: TABLE_LIMIT,
            name_buf: Vec::new(),
            value_buf: Vec::new(),
        }
    }
}

/// Where a decoded string lies: in the block, or in one of the scratch buffers.
#[derive(Clone, Copy)]
enum Str {
    Block(usize, usize),
    Scratch,
}

/// Reads an integer with an `n`-bit prefix (RFC 7541 section 5.1) at `*pos`.
fn integer(block: &[u8], pos: &mut usize, n: u32) -> Result<usize, BadBlock> {
    let truncated = BadBlock("truncated integer");
    let mask = (1usize << n) - 1;
    let first = *block.get(*pos).ok_or(truncated)? as usize & mask;
    *pos += 1;
    if first < mask {
        return Ok(first);
    }
    let mut value = mask;
    let mut shift = 0;
    loop {
        let b = *block.get(*pos).ok_or(truncated)?;
        *pos += 1;
        // Four continuation bytes reach 2^28 + prefix, more than any length or index here.
        if shift > 21 {
            return Err(BadBlock("integer too large"));
        }
        value += ((b & 0x7f) as usize) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
}

/// Reads a string literal (RFC 7541 section 5.2) at `*pos`; Huffman strings go to `scratch`.
fn string(block: &[u8], pos: &mut usize, scratch: &mut Vec<u8>) -> Result<Str, BadBlock> {
    let huffman = *block.get(*pos).ok_or(BadBlock("truncated string"))? & 0x80 != 0;
    let len = integer(block, pos, 7)?;
    let start = *pos;
    let end = start
        .checked_add(len)
        .filter(|&e| e <= block.len())
        .ok_or(BadBlock("string past the block"))?;
    *pos = end;
    if huffman {
        scratch.clear();
        huffman::decode(&block[start..end], scratch).map_err(|_| BadBlock("bad Huffman string"))?;
        Ok(Str::Scratch)
    } else {
        Ok(Str::Block(start, end))
    }
}

impl Decoder {
    /// Decodes one complete header block, calling `f` with each name and value in order.
    pub(crate) fn decode(&mut self, block: &[u8], mut f: impl FnMut(&[u8], &[u8])) -> Result<(), BadBlock> {
        let mut pos = 0;
        let mut first = true;
        while pos < block.len() {
            let b = block[pos];
            if b & 0x80 != 0 {
                // Indexed field.
                let idx = integer(block, &mut pos, 7)?;
                let (name, value) = self.get(idx)?;
                f(name, value);
            } else if b & 0xe0 == 0x20 {
                // Dynamic table size update: only at the start of a block, within our limit.
                if !first {
                    return Err(BadBlock("table size update after a field"));
                }
                let size = integer(block, &mut pos, 5)?;
                if size > TABLE_LIMIT {
                    return Err(BadBlock("table size update above the limit"));
                }
                self.max_size = size;
                self.evict(0);
                continue;
            } else {
                // Literal: with incremental indexing (01), without indexing (0000), never
                // indexed (0001).
                let indexing = b & 0x40 != 0;
                let idx = integer(block, &mut pos, if indexing { 6 } else { 4 })?;
                let name = if idx == 0 {
                    Some(string(block, &mut pos, &mut self.name_buf)?)
                } else {
                    // Checked now; read after the value, so the borrow ends before insertion.
                    self.get(idx)?;
                    None
                };
                let value = string(block, &mut pos, &mut self.value_buf)?;
                let value_bytes = match value {
                    Str::Block(s, e) => &block[s..e],
                    Str::Scratch => &self.value_buf[..],
                };
                let name_bytes = match name {
                    Some(Str::Block(s, e)) => &block[s..e],
                    Some(Str::Scratch) => &self.name_buf[..],
                    None => self.get(idx)?.0,
                };
                if indexing {
                    let mut bytes = Vec::with_capacity(name_bytes.len() + value_bytes.len());
                    bytes.extend_from_slice(name_bytes);
                    bytes.extend_from_slice(value_bytes);
                    let entry = Entry {
                        bytes: bytes.into_boxed_slice(),
                        name_len: name_bytes.len(),
                    };
                    f(entry.name(), entry.value());
                    self.insert(entry);
                } else {
                    f(name_bytes, value_bytes);
                }
            }
            first = false;
        }
        Ok(())
    }

    /// The entry at HPACK index `idx` (1 to 61 static, then dynamic, newest first).
    fn get(&self, idx: usize) -> Result<(&[u8], &[u8]), BadBlock> {
        match idx {
            0 => Err(BadBlock("index 0")),
            1..=61 => {
                let (n, v) = STATIC[idx - 1];
                Ok((n.as_bytes(), v.as_bytes()))
            }
            _ => self
                .table
                .get(idx - 62)
                .map(|e| (e.name(), e.value()))
                .ok_or(BadBlock("index past the table")),
        }
    }

    fn insert(&mut self, entry: Entry) {
        let size = entry.size();
        if size > self.max_size {
            // An entry larger than the table empties it and is not kept (section 4.4).
            self.table.clear();
            self.size = 0;
            return;
        }
        self.evict(size);
        self.size += size;
        self.table.push_front(entry);
    }

    /// Evicts the oldest entries until `room` more bytes fit.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max_size {
            match self.table.pop_back() {
                Some(e) => self.size -= e.size(),
                None => break,
            }
        }
    }

    #[cfg(test)]
    fn table_size(&self) -> usize {
        self.size
    }
}

/// Appends an integer with an `n`-bit prefix, the prefix's other bits set to `flags`.
fn put_integer(out: &mut Vec<u8>, flags: u8, n: u32, mut value: usize) {
    let mask = (1usize << n) - 1;
    if value < mask {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | mask as u8);
    value -= mask;
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    put_integer(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// Appends a field: fully indexed when the static table has it, else a literal without
/// indexing, naming the static entry when there is one.
pub(crate) fn put_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    let mut name_idx = 0;
    for (i, (n, v)) in STATIC.iter().enumerate() {
        if n.as_bytes() == name {
            if v.as_bytes() == value && !v.is_empty() {
                put_integer(out, 0x80, 7, i + 1);
                return;
            }
            if name_idx == 0 {
                name_idx = i + 1;
            }
        }
    }
    put_integer(out, 0, 4, name_idx);
    if name_idx == 0 {
        put_string(out, name);
    }
    put_string(out, value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http2::unhex;

    fn decode(d: &mut Decoder, hex: &str) -> Result<Vec<(String, String)>, BadBlock> {
        let mut out = Vec::new();
        d.decode(&unhex(hex), |n, v| {
            out.push((
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            ));
        })?;
        Ok(out)
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    /// RFC 7541 C.3 (requests, no Huffman) and C.4 (the same with Huffman): one connection's
    /// blocks in order, each relying on the table the previous ones built.
    #[test]
    fn rfc_7541_request_examples() {
        for (blocks, name) in [
            (
                [
                    "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                    "8286 84be 5808 6e6f 2d63 6163 6865",
                    "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
                ],
                "C.3",
            ),
            (
                [
                    "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
                    "8286 84be 5886 a8eb 1064 9cbf",
                    "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
                ],
                "C.4",
            ),
        ] {
            let mut d = Decoder::default();
            let base = [
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
            ];
            assert_eq!(decode(&mut d, blocks[0]).unwrap(), pairs(&base), "{name}.1");
            assert_eq!(d.table_size(), 57);
            let mut second = base.to_vec();
            second.push(("cache-control", "no-cache"));
            assert_eq!(decode(&mut d, blocks[1]).unwrap(), pairs(&second), "{name}.2");
            assert_eq!(d.table_size(), 110);
            let third = [
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/index.html"),
                (":authority", "www.example.com"),
                ("custom-key", "custom-value"),
            ];
            assert_eq!(decode(&mut d, blocks[2]).unwrap(), pairs(&third), "{name}.3");
            assert_eq!(d.table_size(), 164);
            assert_eq!(d.get(62).unwrap(), (&b"custom-key"[..], &b"custom-value"[..]));
        }
    }

    /// RFC 7541 C.5 (responses, no Huffman) and C.6 (with Huffman), with the table limited to
    /// 256 bytes so that entries are evicted.
    #[test]
    fn rfc_7541_response_examples_with_eviction() {
        let c5 = [
            "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
            "4803 3330 37c1 c0bf",
            "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31",
        ];
        let c6 = [
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            "4883 640e ffc1 c0bf",
            "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
        ];
        for (blocks, name) in [(c5, "C.5"), (c6, "C.6")] {
            let mut d = Decoder {
                max_size: 256,
                ..Decoder::default()
            };
            let first = [
                (":status", "302"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                ("location", "https://www.example.com"),
            ];
            assert_eq!(decode(&mut d, blocks[0]).unwrap(), pairs(&first), "{name}.1");
            assert_eq!(d.table_size(), 222);
            let mut second = first;
            second[0] = (":status", "307");
            assert_eq!(decode(&mut d, blocks[1]).unwrap(), pairs(&second), "{name}.2");
            // ":status: 302" was evicted to make room for ":status: 307".
            assert_eq!(d.table_size(), 222);
            assert_eq!(d.get(62).unwrap().1, b"307");
            let third = [
                (":status", "200"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
                ("location", "https://www.example.com"),
                ("content-encoding", "gzip"),
                ("set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"),
            ];
            assert_eq!(decode(&mut d, blocks[2]).unwrap(), pairs(&third), "{name}.3");
            assert_eq!(d.table_size(), 215);
            assert_eq!(d.table.len(), 3);
            assert!(d.get(65).is_err(), "only three entries are left");
        }
    }

    #[test]
    fn hostile_blocks_are_errors_not_panics() {
        let mut d = Decoder::default();
        // Index 0, and indices past the static and (empty) dynamic table.
        assert!(decode(&mut d, "80").is_err());
        assert!(decode(&mut d, "be").is_err());
        assert_eq!(decode(&mut d, "ff00").unwrap_err(), BadBlock("index past the table"));
        // An integer that never ends, and one too large.
        assert!(decode(&mut d, "ff80 8080").is_err());
        assert_eq!(
            decode(&mut d, "ff80 8080 8080 01").unwrap_err(),
            BadBlock("integer too large")
        );
        // A string longer than the block.
        assert_eq!(
            decode(&mut d, "400a 6162").unwrap_err(),
            BadBlock("string past the block")
        );
        // A literal whose name index is past the table.
        assert_eq!(
            decode(&mut d, "7f00 0161").unwrap_err(),
            BadBlock("index past the table")
        );
        // A table size update above our limit, and one after a field.
        assert!(decode(&mut d, "3fe2 1f").is_err(), "4097");
        decode(&mut d, "3fe1 1f").unwrap();
        assert_eq!(
            decode(&mut d, "8820").unwrap_err(),
            BadBlock("table size update after a field")
        );
        // A bad Huffman string (EOS).
        assert_eq!(
            decode(&mut d, "0081 ff01 61").unwrap_err(),
            BadBlock("bad Huffman string")
        );
        assert_eq!(
            decode(&mut d, "0084 ffff ffff 0161").unwrap_err(),
            BadBlock("bad Huffman string")
        );
        // Nothing of it reached the table.
        assert_eq!(d.table_size(), 0);
    }

    #[test]
    fn a_size_update_evicts_and_an_oversized_entry_empties_the_table() {
        let mut d = Decoder::default();
        decode(&mut d, "4003 6162 6303 7879 7a").unwrap();
        assert_eq!(d.table_size(), 38);
        decode(&mut d, "20").unwrap();
        assert_eq!(d.table_size(), 0);
        assert!(d.get(62).is_err());
    }

    #[test]
    fn encoded_fields_decode_back() {
        let mut block = Vec::new();
        put_field(&mut block, b":method", b"GET");
        put_field(&mut block, b":path", b"/a/long/path?with=query");
        put_field(&mut block, b"accept", b"*/*");
        put_field(&mut block, b"x-custom", &[b'v'; 200]);
        assert_eq!(block[0], 0x82, "fully indexed from the static table");
        let mut d = Decoder::default();
        let mut got = Vec::new();
        d.decode(&block, |n, v| got.push((n.to_vec(), v.to_vec()))).unwrap();
        assert_eq!(got[0], (b":method".to_vec(), b"GET".to_vec()));
        assert_eq!(got[1], (b":path".to_vec(), b"/a/long/path?with=query".to_vec()));
        assert_eq!(got[2], (b"accept".to_vec(), b"*/*".to_vec()));
        assert_eq!(got[3], (b"x-custom".to_vec(), vec![b'v'; 200]));
        assert_eq!(d.table_size(), 0, "crest never asks a server to index");
    }
}
