// tracepipe from Rust through the C API, with nothing but std: the
// functions and structs of tracepipe_c.h declared here by hand
// (docs/c_api.md, "Python (ctypes), Rust, Go").
//
//   rustc --edition 2021 c_api_rust.rs -L PREFIX/lib -l tracepipe_c
use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicPtr, Ordering};

#[repr(C)]
struct Field {
    name: *const c_char,
    kind: c_int, // 0 INT, 1 CHARS, 2 STRING
    size: u32,
    array_len: u32,
    is_signed: c_int,
    type_: *const c_char,
}

#[repr(C)]
struct EventSpec {
    struct_size: usize,
    system: *const c_char,
    name: *const c_char,
    fields: *const Field,
    field_count: usize,
    field_struct_size: usize,
    print_fmt: *const c_char,
}

/// tracepipe_tracepoint: the event site's word, in a static (it must not move).
#[repr(C)]
struct Tracepoint(AtomicPtr<c_void>);
static TP_SAMPLE: Tracepoint = Tracepoint(AtomicPtr::new(null_mut()));

#[repr(C)]
struct EventStats {
    struct_size: usize,
    kept: u64,
    discarded: u64,
    lost: u64,
    staged: u64,
    direct: u64,
}

/// The record's body: the fields in the event's layout.
#[repr(C)]
struct Sample {
    seq: u32,
    tag: [u8; 12],
}

#[link(name = "tracepipe_c")]
extern "C" {
    fn tracepipe_event_declare(spec: *const EventSpec, tp: *const Tracepoint, out: *mut *mut c_void) -> c_int;
    fn tracepipe_instance_create(options: *const c_void, out: *mut *mut c_void) -> c_int;
    fn tracepipe_instance_enable(inst: *mut c_void, event: *const c_void, on: c_int) -> c_int;
    fn tracepipe_instance_set_filter(inst: *mut c_void, event: *const c_void, expr: *const c_char) -> c_int;
    fn tracepipe_trace(event: *const c_void, body: *const c_void, size: usize);
    fn tracepipe_instance_event_stats(inst: *const c_void, event: *const c_void, out: *mut EventStats) -> c_int;
    fn tracepipe_instance_write_trace_dat(inst: *mut c_void, path: *const c_char, flags: u32) -> c_int;
    fn tracepipe_instance_destroy(inst: *mut c_void);
    fn tracepipe_last_error() -> *const c_char;
}

fn last_error() -> String {
    unsafe { CStr::from_ptr(tracepipe_last_error()) }.to_string_lossy().into_owned()
}

fn main() {
    let fields = [
        Field { name: c"seq".as_ptr(), kind: 0, size: 4, array_len: 0, is_signed: 0, type_: null() },
        Field { name: c"tag".as_ptr(), kind: 1, size: 0, array_len: 12, is_signed: 0, type_: null() },
    ];
    let spec = EventSpec {
        struct_size: std::mem::size_of::<EventSpec>(),
        system: c"rust".as_ptr(),
        name: c"sample".as_ptr(),
        fields: fields.as_ptr(),
        field_count: fields.len(),
        field_struct_size: std::mem::size_of::<Field>(),
        print_fmt: null(),
    };
    let mut event = null_mut();
    let mut inst = null_mut();
    unsafe {
        if tracepipe_event_declare(&spec, &TP_SAMPLE, &mut event) != 0 || tracepipe_instance_create(null(), &mut inst) != 0 {
            eprintln!("{}", last_error());
            std::process::exit(1);
        }
        tracepipe_instance_enable(inst, event, 1);
        if tracepipe_instance_set_filter(inst, event, c"seqq < 5".as_ptr()) != 0 {
            println!("{}", last_error()); // the kernel's message and caret
        }
        tracepipe_instance_set_filter(inst, event, c"seq < 5".as_ptr());
    }
    for seq in 0..10u32 {
        // TRACEPIPE_TRACEPOINT_ENABLED: one relaxed load of the static word.
        if !TP_SAMPLE.0.load(Ordering::Relaxed).is_null() {
            let mut s = Sample { seq, tag: [0; 12] };
            s.tag[..4].copy_from_slice(b"rust");
            unsafe { tracepipe_trace(event, &s as *const Sample as *const c_void, std::mem::size_of::<Sample>()) };
        }
    }
    let mut st = EventStats { struct_size: std::mem::size_of::<EventStats>(), kept: 0, discarded: 0, lost: 0, staged: 0, direct: 0 };
    unsafe {
        tracepipe_instance_event_stats(inst, event, &mut st);
        if tracepipe_instance_write_trace_dat(inst, c"c_api_rust.dat".as_ptr(), 0) != 0 {
            eprintln!("{}", last_error());
        }
        tracepipe_instance_destroy(inst);
    }
    println!("kept {} of {}", st.kept, st.kept + st.discarded);
    std::process::exit(if st.kept == 5 && st.discarded == 5 { 0 } else { 1 });
}
