//! The case grammar of docs/cases.md:
//! `TYPE ( ":" KEY "=" VALUE )*`, parsed with errors that name the offending
//! part.
use ferry_arrow::{Device, DeviceType, Error, Result};

/// The TYPE word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Int8,
    Int16,
    Int32,
    Int64,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    Float32,
    Float64,
    Bool,
    Utf8,
    Binary,
    ListInt32,
    StructInt32Utf8,
    DictInt32Utf8,
}

impl Ty {
    const ALL: [(&'static str, Ty); 16] = [
        ("int8", Ty::Int8),
        ("int16", Ty::Int16),
        ("int32", Ty::Int32),
        ("int64", Ty::Int64),
        ("uint8", Ty::UInt8),
        ("uint16", Ty::UInt16),
        ("uint32", Ty::UInt32),
        ("uint64", Ty::UInt64),
        ("float32", Ty::Float32),
        ("float64", Ty::Float64),
        ("bool", Ty::Bool),
        ("utf8", Ty::Utf8),
        ("binary", Ty::Binary),
        ("list_int32", Ty::ListInt32),
        ("struct_int32_utf8", Ty::StructInt32Utf8),
        ("dict_int32_utf8", Ty::DictInt32Utf8),
    ];

    /// The TYPE word, which is also the top-level field name.
    pub fn word(self) -> &'static str {
        Ty::ALL.iter().find(|(_, t)| *t == self).map(|(w, _)| *w).unwrap_or("?")
    }

    /// The top-level format string.
    pub fn format(self) -> &'static str {
        match self {
            Ty::Int8 => "c",
            Ty::Int16 => "s",
            Ty::Int32 => "i",
            Ty::Int64 => "l",
            Ty::UInt8 => "C",
            Ty::UInt16 => "S",
            Ty::UInt32 => "I",
            Ty::UInt64 => "L",
            Ty::Float32 => "f",
            Ty::Float64 => "g",
            Ty::Bool => "b",
            Ty::Utf8 => "u",
            Ty::Binary => "z",
            Ty::ListInt32 => "+l",
            Ty::StructInt32Utf8 => "+s",
            Ty::DictInt32Utf8 => "i",
        }
    }
}

/// A failure the producer injects on purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fail {
    Nothing,
    Export,
    GetSchema,
    /// The N-th call of get_next (1-based).
    GetNext(u64),
    /// Async streams only: the checking consumer refuses the N-th task
    /// (1-based); the synchronous entry points accept and ignore it.
    Consumer(u64),
}

/// Largest length + offset a case may ask for.
pub const MAX_PHYSICAL: i64 = 1 << 28;

/// A parsed case.
#[derive(Clone, Debug)]
pub struct Case {
    pub ty: Ty,
    pub length: i64,
    pub nulls: i64,
    pub seed: u32,
    pub offset: i64,
    pub device_type: DeviceType,
    pub device_id: i64,
    pub device_word: String,
    pub batches: i64,
    pub fail: Fail,
    /// Async streams only (accepted and ignored here: the generic async
    /// layer reads them from the case string itself): the checking
    /// consumer's request window (>= 1) and the batch count after which it
    /// cancels (0: never).
    pub window: i64,
    pub cancel: i64,
}

fn parse_int(spec: &str, key: &str, value: &str) -> Result<i64> {
    let ok = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit() || b == b'-');
    let parsed = if ok { value.parse::<i64>().ok() } else { None };
    let n =
        parsed.ok_or_else(|| Error::invalid(format!("case {spec:?}: malformed number {value:?} for key {key:?}")))?;
    if n < 0 {
        return Err(Error::invalid(format!(
            "case {spec:?}: {key} must not be negative, got {n}"
        )));
    }
    Ok(n)
}

impl Case {
    /// Parses `spec`; `EINVAL` naming the unknown type, key or malformed
    /// value, or the device's own error when it is not available.
    pub fn parse(spec: &str) -> Result<Case> {
        let mut parts = spec.split(':');
        let word = parts.next().unwrap_or("");
        let ty = Ty::ALL
            .iter()
            .find(|(w, _)| *w == word)
            .map(|(_, t)| *t)
            .ok_or_else(|| Error::invalid(format!("case {spec:?}: unknown type {word:?}")))?;
        let mut case = Case {
            ty,
            length: 16,
            nulls: 0,
            seed: 1,
            offset: 0,
            device_type: DeviceType::CPU,
            device_id: -1,
            device_word: "cpu".into(),
            batches: 3,
            fail: Fail::Nothing,
            window: 1,
            cancel: 0,
        };
        let mut seen: Vec<&str> = Vec::new();
        for part in parts {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| Error::invalid(format!("case {spec:?}: {part:?} is not KEY=VALUE")))?;
            // Same decision as the C plugin: a key given twice is an error.
            if seen.contains(&key) {
                return Err(Error::invalid(format!("case {spec:?}: duplicate key {key:?}")));
            }
            seen.push(key);
            match key {
                "length" => case.length = parse_int(spec, key, value)?,
                "nulls" => case.nulls = parse_int(spec, key, value)?,
                "offset" => case.offset = parse_int(spec, key, value)?,
                "batches" => case.batches = parse_int(spec, key, value)?,
                "window" => {
                    case.window = parse_int(spec, key, value)?;
                    if case.window == 0 {
                        return Err(Error::invalid(format!(
                            "window=0 in case {spec:?}: a consumer must request at least 1 batch"
                        )));
                    }
                }
                "cancel" => case.cancel = parse_int(spec, key, value)?,
                "seed" => {
                    let n = parse_int(spec, key, value)?;
                    case.seed = u32::try_from(n).map_err(|_| {
                        Error::invalid(format!("case {spec:?}: seed {n} is out of range (0 to 4294967295)"))
                    })?;
                }
                "device" => {
                    let (device_type, device_id) = match value {
                        "cpu" => (DeviceType::CPU, -1),
                        "sim" => (DeviceType::SIM, 0),
                        "cuda" => (DeviceType::CUDA, 0),
                        "rocm" => (DeviceType::ROCM, 0),
                        other => {
                            return Err(Error::invalid(format!(
                                "case {spec:?}: unknown device {other:?} (cpu, sim, cuda, rocm)"
                            )))
                        }
                    };
                    case.device_type = device_type;
                    case.device_id = device_id;
                    case.device_word = value.to_string();
                }
                "fail" => {
                    case.fail = match value {
                        "export" => Fail::Export,
                        "get_schema" => Fail::GetSchema,
                        v if v.starts_with("get_next@") => {
                            let n = &v["get_next@".len()..];
                            let n = parse_int(spec, "fail=get_next@", n)?;
                            if n == 0 {
                                return Err(Error::invalid(format!(
                                    "case {spec:?}: fail=get_next@N counts from 1, got 0"
                                )));
                            }
                            Fail::GetNext(n as u64)
                        }
                        v if v.starts_with("consumer@") => {
                            let n = parse_int(spec, "fail=consumer@", &v["consumer@".len()..])?;
                            if n == 0 {
                                return Err(Error::invalid(format!(
                                    "case {spec:?}: fail=consumer@N counts from 1, got 0"
                                )));
                            }
                            Fail::Consumer(n as u64)
                        }
                        other => {
                            return Err(Error::invalid(format!(
                                "case {spec:?}: unknown failure {other:?} (export, get_schema, get_next@N, consumer@N)"
                            )))
                        }
                    }
                }
                other => return Err(Error::invalid(format!("case {spec:?}: unknown key {other:?}"))),
            }
        }
        // Every int32 offsets buffer must fit; the C plugin uses the same limit.
        if case.length.checked_add(case.offset).is_none_or(|p| p > MAX_PHYSICAL) {
            return Err(Error::invalid(format!("case {spec:?}: length + offset exceeds 2^28")));
        }
        Ok(case)
    }

    /// Fails with the device's own code and reason when the case's device is
    /// not available (kept apart from parsing so that `fail=export` answers
    /// the same on every machine, as in the C plugin).
    pub fn require_device(&self) -> Result<()> {
        if self.device_type != DeviceType::CPU {
            Device::resolve(self.device_type, self.device_id).map_err(|e| {
                Error::new(
                    e.code(),
                    format!("device {:?} is not available: {}", self.device_word, e.message()),
                )
            })?;
        }
        Ok(())
    }

    /// Whether logical element `i` is null.
    pub fn is_null(&self, i: i64) -> bool {
        self.nulls > 0 && i % self.nulls == self.nulls - 1
    }

    /// The exact null count of the top-level array.
    pub fn null_count(&self) -> i64 {
        if self.nulls > 0 {
            self.length / self.nulls
        } else {
            0
        }
    }

    /// The same case for batch `b` of a stream (seed + b).
    pub fn batch(&self, b: i64) -> Case {
        let mut c = self.clone();
        c.seed = self.seed.wrapping_add(b as u32);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_keys() {
        let c = Case::parse("int32").unwrap();
        assert_eq!((c.length, c.nulls, c.seed, c.offset, c.batches), (16, 0, 1, 0, 3));
        let c = Case::parse("utf8:length=5:nulls=2:seed=4294967295:offset=3:batches=0:fail=get_next@2").unwrap();
        assert_eq!((c.length, c.nulls, c.seed, c.offset, c.batches), (5, 2, u32::MAX, 3, 0));
        assert_eq!(c.fail, Fail::GetNext(2));
        assert_eq!(c.null_count(), 2);
        assert!(c.is_null(1) && c.is_null(3) && !c.is_null(0));
    }

    #[test]
    fn errors_name_the_offending_part() {
        for (spec, needle) in [
            ("int33", "unknown type \"int33\""),
            ("int32:colour=red", "unknown key \"colour\""),
            ("int32:length=ten", "malformed number \"ten\""),
            ("int32:length=-1", "must not be negative"),
            ("int32:seed=4294967296", "out of range"),
            ("int32:device=tpu", "unknown device \"tpu\""),
            ("int32:fail=later", "unknown failure"),
            ("int32:length", "not KEY=VALUE"),
            ("int32:seed=1:seed=2", "duplicate key \"seed\""),
            ("int32:length=268435456:offset=1", "exceeds 2^28"),
            ("", "unknown type"),
        ] {
            let e = Case::parse(spec).unwrap_err();
            assert_eq!(e.code(), ferry_arrow::errno::EINVAL, "{spec}");
            assert!(e.message().contains(needle), "{spec}: {}", e.message());
        }
    }
}
