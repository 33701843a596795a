//! Addresses in JSON as `"0x..."` strings (docs/json.md, "Addresses"): a kernel or user
//! address does not fit the 53 bits of a double, which is what `jq`, JavaScript and many
//! other readers turn a JSON number into (`jq` reads `...fa00` as `...f800`, another cache
//! line). Every `--json` document writes addresses through these.

use serde::Serializer;

fn text(v: u64) -> String {
    format!("{v:#x}")
}

/// One address: `#[serde(serialize_with = "crate::hex::address")]`.
pub fn address<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&text(*v))
}

/// A list of addresses: `#[serde(serialize_with = "crate::hex::addresses")]`.
pub fn addresses<S: Serializer>(v: &[u64], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|a| text(*a)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn addresses_are_hex_strings_that_keep_every_bit() {
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::new(&mut out);
        super::address(&0xff28_4d17_b5c0_fa00, &mut ser).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "\"0xff284d17b5c0fa00\"");
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::new(&mut out);
        super::addresses(&[0x40, u64::MAX], &mut ser).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "[\"0x40\",\"0xffffffffffffffff\"]"
        );
    }
}
