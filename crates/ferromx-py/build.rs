//! Emits pyo3's `Py_3_x` cfgs for the Python this extension is built against, so
//! the glue can use a C API call only where that Python has it.

fn main() {
    pyo3_build_config::use_pyo3_cfgs();
}
