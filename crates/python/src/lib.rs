//! `loopdbg._native`: the Python package's calls into the workspace. Each
//! function hands bytes or a path to `loopdbg-corpus` or `loopdbg-judge`
//! and returns the JSON the CLI prints, as text, or a table's rows as
//! Arrow columns; `python/loopdbg` parses it and shapes the Python API. Nothing is judged here: this file only
//! converts, releases the GIL while the Rust code works, and turns a
//! located error into `loopdbg.InputError`.

mod arrow;

use std::path::PathBuf;

use loopdbg_corpus::report::{check_bytes, check_file, jsonl_file_record, jsonl_record, summary};
use loopdbg_corpus::table::{Row, rows_of_bytes, rows_of_file};
use loopdbg_engine::LoadError;
use loopdbg_formats::route::is_bedrock_path;
use loopdbg_judge::fix::Repair;
use loopdbg_judge::gate::{
    Decision, Gatekeeper, Memory, OnInvalid, OnUnjudged, as_bedrock_error, judge_as,
};
use loopdbg_judge::mcp::McpCall;
use loopdbg_read::Source;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use serde_json::{Value, json};

/// mimalloc, as the CLI: see Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pyo3::create_exception!(
    _native,
    InputError,
    PyException,
    "An input loopdbg cannot read: the message says where (`file:line:column: …`); \
     `origin`, `line` and `column` hold the parts."
);

/// `InputError` for a located error, with its parts as attributes.
fn input_error(py: Python<'_>, e: &LoadError) -> PyErr {
    let location = e.location();
    located(
        py,
        e.to_string(),
        location.map(|l| l.0),
        location.map(|l| l.1),
    )
}

fn located(py: Python<'_>, message: String, line: Option<usize>, column: Option<usize>) -> PyErr {
    let origin = message.split(':').next().unwrap_or_default().to_string();
    let err = InputError::new_err(message);
    let value = err.value(py);
    let _ = value.setattr("origin", origin);
    let _ = value.setattr("line", line);
    let _ = value.setattr("column", column);
    err
}

/// The input format a `provider=` names (`check --input-format`'s names).
fn forced(provider: Option<&str>) -> PyResult<Option<Source>> {
    provider
        .map(|name| {
            name.parse::<Source>().map_err(|_| {
                PyValueError::new_err(format!(
                    "unknown provider `{name}` (expected one of {})",
                    Source::names()
                ))
            })
        })
        .transpose()
}

fn repair_mode(mode: &str) -> PyResult<Repair> {
    mode.parse::<Repair>().map_err(|_| {
        PyValueError::new_err(format!(
            "unknown mode `{mode}` (expected synthesize or strip)"
        ))
    })
}

/// The answered `tools/call`s of an MCP capture (`check --mcp`).
fn mcp_calls(py: Python<'_>, mcp: Option<PathBuf>) -> PyResult<Vec<McpCall>> {
    match mcp {
        None => Ok(Vec::new()),
        Some(path) => loopdbg_corpus::mcp_calls(&path).map_err(|e| input_error(py, &e)),
    }
}

fn to_text(value: &impl serde::Serialize) -> PyResult<String> {
    serde_json::to_string(value).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// `check --format json` over `data` (a body, a message array, JSON Lines,
/// a log, a trace), named `origin`: the summary document, as JSON text.
#[pyfunction]
#[pyo3(signature = (data, provider=None, origin="<body>"))]
fn check(py: Python<'_>, data: Vec<u8>, provider: Option<&str>, origin: &str) -> PyResult<String> {
    let forced = forced(provider)?;
    let report = py.detach(|| check_bytes(origin, data, forced, &[], &mut |_, _| {}));
    to_text(&summary(&[report]))
}

/// `check --format json PATH…`: the summary document, as JSON text.
#[pyfunction]
#[pyo3(signature = (paths, provider=None, mcp=None))]
fn check_files(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    provider: Option<&str>,
    mcp: Option<PathBuf>,
) -> PyResult<String> {
    let forced = forced(provider)?;
    let calls = mcp_calls(py, mcp)?;
    let reports = py.detach(|| {
        paths
            .iter()
            .map(|p| check_file(p, forced, &calls, &mut |_, _| {}, &mut |_| {}))
            .collect::<Vec<_>>()
    });
    to_text(&summary(&reports))
}

/// `check --format jsonl PATH…`: its records, one JSON text each.
#[pyfunction]
#[pyo3(signature = (paths, provider=None, mcp=None))]
fn check_files_jsonl(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    provider: Option<&str>,
    mcp: Option<PathBuf>,
) -> PyResult<Vec<String>> {
    let forced = forced(provider)?;
    let calls = mcp_calls(py, mcp)?;
    let records = py.detach(|| {
        let mut records = Vec::new();
        let mut reports = Vec::new();
        for p in &paths {
            let emit = &mut |file: &str, r: &_| {
                // A report serializes (no map with non-string keys).
                records.push(serde_json::to_string(&jsonl_record(file, r)).unwrap_or_default());
            };
            reports.push(check_file(p, forced, &calls, emit, &mut |_| {}));
        }
        let files = reports.iter().filter_map(jsonl_file_record);
        records.extend(files.map(|v| v.to_string()));
        records
    });
    Ok(records)
}

/// Every row of `paths`, checked without the GIL.
fn rows_of_paths(py: Python<'_>, paths: &[PathBuf], provider: Option<&str>) -> PyResult<Vec<Row>> {
    let forced = forced(provider)?;
    Ok(py.detach(|| {
        paths
            .iter()
            .flat_map(|p| rows_of_file(p, forced, &[]))
            .collect()
    }))
}

/// The check as rows (one per request checked, one per file or line that
/// gave none), as a JSON array.
#[pyfunction]
#[pyo3(signature = (paths, provider=None))]
fn rows(py: Python<'_>, paths: Vec<PathBuf>, provider: Option<&str>) -> PyResult<String> {
    to_text(&rows_of_paths(py, &paths, provider)?)
}

/// The rows of `data` held in memory, named `origin`, as a JSON array.
#[pyfunction]
#[pyo3(signature = (data, provider=None, origin="<body>"))]
fn rows_of(
    py: Python<'_>,
    data: Vec<u8>,
    provider: Option<&str>,
    origin: &str,
) -> PyResult<String> {
    let forced = forced(provider)?;
    let rows = py.detach(|| rows_of_bytes(origin, data, forced));
    to_text(&rows)
}

/// [`rows`] as Arrow columns (`pyarrow.record_batch` takes them).
#[pyfunction]
#[pyo3(signature = (paths, provider=None))]
fn rows_arrow(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    provider: Option<&str>,
) -> PyResult<arrow::ArrowRows> {
    let rows = rows_of_paths(py, &paths, provider)?;
    py.detach(|| arrow::batch_of(&rows))
}

/// [`rows_of`] as Arrow columns.
#[pyfunction]
#[pyo3(signature = (data, provider=None, origin="<body>"))]
fn rows_arrow_of(
    py: Python<'_>,
    data: Vec<u8>,
    provider: Option<&str>,
    origin: &str,
) -> PyResult<arrow::ArrowRows> {
    let forced = forced(provider)?;
    py.detach(|| arrow::batch_of(&rows_of_bytes(origin, data, forced)))
}

/// `check --fix MODE` over `data`: the repaired input as text, and how
/// many calls or results the repair added or removed.
#[pyfunction]
#[pyo3(signature = (data, mode="synthesize", provider=None, origin="<body>"))]
fn fix(
    py: Python<'_>,
    data: Vec<u8>,
    mode: &str,
    provider: Option<&str>,
    origin: &str,
) -> PyResult<(String, usize)> {
    let forced = forced(provider)?;
    let how = repair_mode(mode)?;
    let mut out = Vec::new();
    let write_err = |e: std::io::Error| LoadError::Unwritable {
        origin: origin.to_string(),
        reason: e.to_string(),
    };
    let written = py.detach(|| {
        loopdbg_corpus::write_repaired_bytes(origin, data, forced, how, &mut out, &write_err)
    });
    let changes = written.map_err(|e| input_error(py, &e))?;
    let text = String::from_utf8(out).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((text, changes))
}

/// The proxy's gate in process: one per guarded client, so a Responses
/// request that continues a stored response is judged with the calls that
/// response made (as the proxy does).
#[pyclass(frozen)]
struct Gate {
    policy: OnInvalid,
    on_unjudged: OnUnjudged,
    memory: Memory,
}

#[pymethods]
impl Gate {
    /// `mode`: `warn` (forward, report), `raise` (answer the provider's 400
    /// locally) or `repair` / `repair=strip` (send the repaired body).
    /// `history_memory_mib`: the memory for recent conversations, so that
    /// each client's next request is read only past what it shares with
    /// its last (as the proxy's `--history-memory`; 0 reads every request
    /// whole).
    #[new]
    #[pyo3(signature = (mode="warn", on_unjudged="block", history_memory_mib=1024))]
    fn new(mode: &str, on_unjudged: &str, history_memory_mib: usize) -> PyResult<Gate> {
        let policy = match mode {
            "warn" => OnInvalid::Forward,
            "raise" => OnInvalid::Block,
            "repair" => OnInvalid::Repair(Repair::Synthesize),
            other => match other.strip_prefix("repair=") {
                Some(how) => OnInvalid::Repair(repair_mode(how)?),
                None => {
                    return Err(PyValueError::new_err(format!(
                        "unknown mode `{mode}` (expected warn, raise, repair or repair=strip)"
                    )));
                }
            },
        };
        let on_unjudged = on_unjudged
            .parse::<OnUnjudged>()
            .map_err(PyValueError::new_err)?;
        Ok(Gate {
            policy,
            on_unjudged,
            memory: Memory::new(history_memory_mib.saturating_mul(1 << 20)),
        })
    }

    /// Judges a request sent to `path` (with its query) with `body`: the
    /// verdict as JSON text (`provider`, `action`, `findings`, `rejected`,
    /// and `status`/`body` for a refusal or `body` for a repair).
    fn judge(&self, py: Python<'_>, path: &str, body: Vec<u8>) -> PyResult<String> {
        let judged = py.detach(|| {
            judge_as(
                Gatekeeper::Guard,
                path,
                &body,
                self.policy,
                self.on_unjudged,
                &self.memory,
            )
        });
        let provider = judged.provider.map(|p| Source::Provider(p).as_str());
        let Some(v) = judged.verdict else {
            return to_text(&json!({"provider": provider, "action": "unjudged", "findings": []}));
        };
        let mut out = json!({
            "provider": provider,
            "findings": v.findings,
            "rejected": v.rejected,
            "unread": v.unread,
        });
        match v.decision {
            Decision::Forward => out["action"] = "forward".into(),
            Decision::Repaired {
                body: repaired,
                changes,
            } => {
                out["action"] = "repair".into();
                // The body to send: what the repair left alone as written.
                out["text"] =
                    loopdbg_formats::edit::rewrite(&String::from_utf8_lossy(&body), &repaired)
                        .into();
                out["body"] = repaired;
                out["changes"] = changes.into();
            }
            Decision::Block { status, body } => {
                let bedrock = is_bedrock_path(path);
                out["action"] = "block".into();
                out["status"] = status.into();
                out["body"] = match bedrock {
                    true => as_bedrock_error(&body),
                    false => body,
                };
                out["bedrock"] = bedrock.into();
            }
        }
        to_text(&out)
    }

    /// Remembers a Responses API answer (its JSON), so a later request that
    /// continues it by `previous_response_id` is judged against its calls.
    fn remember(&self, response: Vec<u8>) {
        if let (Ok(doc), Ok(mut store)) = (
            serde_json::from_slice::<Value>(&response),
            self.memory.responses.lock(),
        ) {
            store.remember(&doc);
        }
    }
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add("PROVIDERS", Source::names())?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(check_files, m)?)?;
    m.add_function(wrap_pyfunction!(check_files_jsonl, m)?)?;
    m.add_function(wrap_pyfunction!(rows, m)?)?;
    m.add_function(wrap_pyfunction!(rows_of, m)?)?;
    m.add_function(wrap_pyfunction!(rows_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(rows_arrow_of, m)?)?;
    m.add_class::<arrow::ArrowRows>()?;
    m.add_function(wrap_pyfunction!(fix, m)?)?;
    m.add_class::<Gate>()?;
    m.add("_located", wrap_pyfunction!(located_error, m)?)?;
    Ok(())
}

/// Builds an `InputError` from its parts (for the Python side, which raises
/// it for a report whose only content is an error).
#[pyfunction]
#[pyo3(signature = (message, line=None, column=None))]
fn located_error(
    py: Python<'_>,
    message: String,
    line: Option<usize>,
    column: Option<usize>,
) -> PyErr {
    located(py, message, line, column)
}
