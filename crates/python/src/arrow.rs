//! Rows as Arrow columns, handed to Python through the Arrow PyCapsule
//! interface (`__arrow_c_array__`): arrow-rs builds the columns and
//! exports them through the Arrow C data interface; `pyarrow.record_batch`
//! imports them without copying and without a Python object per row.
//! They crossed as JSON text before, which held the package to 80 % of the
//! CLI's rate (issue 40, item 4).

use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Int64Builder, ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch, StructArray};
use arrow_schema::{DataType, Field, Schema};
use loopdbg_corpus::table::Row;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// The table's columns, in `loopdbg.fleet.SCHEMA`'s order and types (every
/// field nullable, as pyarrow's schema declares them; a test in the
/// package's suite compares the two).
fn schema() -> Schema {
    let text = || DataType::Utf8;
    let number = || DataType::Int64;
    let list = || DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)));
    let fields = [
        ("file", text()),
        ("format", text()),
        ("conversation", number()),
        ("request", number()),
        ("line", number()),
        ("label", text()),
        ("messages", number()),
        ("findings", number()),
        ("problems", number()),
        ("rejected_by_provider", DataType::Boolean),
        ("severity", text()),
        ("kinds", list()),
        ("ids", list()),
        ("message", text()),
        ("error", text()),
    ];
    Schema::new(
        fields
            .into_iter()
            .map(|(name, kind)| Field::new(name, kind, true))
            .collect::<Vec<_>>(),
    )
}

/// A count as Arrow's int64 (a count past `i64::MAX` cannot happen).
fn int(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The columns of `rows`.
fn columns(rows: &[Row]) -> Vec<ArrayRef> {
    let texts = || StringBuilder::with_capacity(rows.len(), rows.len() * 16);
    let numbers = || Int64Builder::with_capacity(rows.len());
    let lists = || ListBuilder::new(StringBuilder::new());
    let (mut file, mut format, mut label, mut severity, mut message, mut error) =
        (texts(), texts(), texts(), texts(), texts(), texts());
    let (mut conversation, mut request, mut line, mut messages, mut findings, mut problems) = (
        numbers(),
        numbers(),
        numbers(),
        numbers(),
        numbers(),
        numbers(),
    );
    let mut rejected = BooleanBuilder::with_capacity(rows.len());
    let (mut kinds, mut ids) = (lists(), lists());
    for row in rows {
        file.append_value(&row.file);
        format.append_option(row.format.as_deref());
        conversation.append_option(row.conversation.map(int));
        request.append_option(row.request.map(int));
        line.append_option(row.line.map(int));
        label.append_option(row.label.as_deref());
        messages.append_option(row.messages.map(int));
        findings.append_value(int(row.findings));
        problems.append_value(int(row.problems));
        rejected.append_value(row.rejected_by_provider);
        severity.append_option(row.severity);
        for kind in &row.kinds {
            kinds.values().append_value(kind);
        }
        kinds.append(true);
        for id in &row.ids {
            ids.values().append_value(id);
        }
        ids.append(true);
        message.append_option(row.message.as_deref());
        error.append_option(row.error.as_deref());
    }
    vec![
        Arc::new(file.finish()),
        Arc::new(format.finish()),
        Arc::new(conversation.finish()),
        Arc::new(request.finish()),
        Arc::new(line.finish()),
        Arc::new(label.finish()),
        Arc::new(messages.finish()),
        Arc::new(findings.finish()),
        Arc::new(problems.finish()),
        Arc::new(rejected.finish()),
        Arc::new(severity.finish()),
        Arc::new(kinds.finish()),
        Arc::new(ids.finish()),
        Arc::new(message.finish()),
        Arc::new(error.finish()),
    ]
}

/// `rows` as one record batch, as a struct array (what the C data
/// interface carries a batch as).
pub fn batch_of(rows: &[Row]) -> PyResult<ArrowRows> {
    let batch = RecordBatch::try_new(Arc::new(schema()), columns(rows))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(ArrowRows(StructArray::from(batch)))
}

/// Checked rows as Arrow columns: `pyarrow.record_batch(rows)` takes them
/// (the Arrow PyCapsule interface), as does any library that reads it
/// (polars, DuckDB, arro3).
#[pyclass(frozen, module = "loopdbg._native")]
pub struct ArrowRows(StructArray);

#[pymethods]
impl ArrowRows {
    /// The rows as an Arrow C data interface schema and array, each in a
    /// capsule. A requested schema is not cast to: the columns are the
    /// table's own.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let _ = requested_schema;
        let data = arrow_array::Array::to_data(&self.0);
        let (array, schema) =
            arrow_array::ffi::to_ffi(&data).map_err(|e| PyValueError::new_err(e.to_string()))?;
        // The consumer moves each struct out of its capsule (leaving its
        // release callback empty); a capsule never imported releases its
        // struct when it is dropped (the structs' own `Drop`).
        let schema = PyCapsule::new_with_value(py, schema, c"arrow_schema")?;
        let array = PyCapsule::new_with_value(py, array, c"arrow_array")?;
        Ok((schema, array))
    }

    /// How many rows.
    fn __len__(&self) -> usize {
        arrow_array::Array::len(&self.0)
    }
}
