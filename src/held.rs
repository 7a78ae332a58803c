//! What a Python object holds for one thread at a time: a lease, a writer, a reader.
//!
//! The object's lock is held only to take the value out and put it back, never while zstd
//! runs or while waiting for the GIL, so a second thread gets a clear error instead of a
//! deadlock, and `close()` from another thread takes effect when the running call ends.

use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard};

use pyo3::PyResult;

use crate::errors;

enum State<T> {
    Ready(T),
    /// Taken by a call that is running now.
    Busy,
    /// Taken by a running call, and closed meanwhile: the value is freed when it comes back.
    BusyClosing,
    Closed,
}

/// A value that one call at a time may take.
pub struct Held<T> {
    state: Mutex<State<T>>,
    what: &'static str,
}

impl<T> Held<T> {
    pub fn new(value: T, what: &'static str) -> Self {
        Held {
            state: Mutex::new(State::Ready(value)),
            what,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the value for one call; it goes back when the guard drops.
    pub fn take(&self) -> PyResult<Taken<'_, T>> {
        let mut state = self.lock();
        match std::mem::replace(&mut *state, State::Busy) {
            State::Ready(value) => Ok(Taken {
                held: self,
                value: Some(value),
            }),
            other => {
                let closed = matches!(other, State::Closed | State::BusyClosing);
                *state = other;
                drop(state);
                Err(if closed {
                    errors::closed(self.what)
                } else {
                    errors::busy(
                        self.what,
                        "it is for one thread at a time (take one per thread: the pool is shared)",
                    )
                })
            }
        }
    }

    /// Closes: returns the value when it is idle, so that the caller can finish it. A value
    /// in use is freed when its call ends. Idempotent.
    pub fn close(&self) -> Option<T> {
        let mut state = self.lock();
        match std::mem::replace(&mut *state, State::Closed) {
            State::Ready(value) => Some(value),
            State::Busy | State::BusyClosing => {
                *state = State::BusyClosing;
                None
            }
            State::Closed => None,
        }
    }

    /// Closes only if idle: returns the value to finish, None if already closed, and a
    /// BusyError while a call runs (a writer's close must not race its write).
    pub fn close_idle(&self) -> PyResult<Option<T>> {
        let mut state = self.lock();
        match std::mem::replace(&mut *state, State::Closed) {
            State::Ready(value) => Ok(Some(value)),
            State::Closed => Ok(None),
            busy => {
                *state = busy;
                Err(errors::busy(self.what, "close it when that call returns"))
            }
        }
    }

    fn closed_error(&self) -> pyo3::PyErr {
        errors::closed(self.what)
    }

    /// Ok while open: for `__enter__`, which must refuse a closed object.
    pub fn check_open(&self) -> PyResult<()> {
        if self.is_closed() {
            return Err(self.closed_error());
        }
        Ok(())
    }

    pub fn is_closed(&self) -> bool {
        matches!(*self.lock(), State::Closed | State::BusyClosing)
    }
}

/// The value, out of its holder for the length of one call.
pub struct Taken<'a, T> {
    held: &'a Held<T>,
    value: Option<T>,
}

impl<T> Taken<'_, T> {
    /// Ends the value's life now (a writer that has closed, a failed reader): the holder
    /// becomes closed and the value is dropped by the caller.
    pub fn retire(mut self) -> T {
        let value = self.value.take().expect("taken value present");
        *self.held.lock() = State::Closed;
        value
    }
}

impl<T> Deref for Taken<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value.as_ref().expect("taken value present")
    }
}

impl<T> DerefMut for Taken<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value.as_mut().expect("taken value present")
    }
}

impl<T> Drop for Taken<'_, T> {
    fn drop(&mut self) {
        let Some(value) = self.value.take() else {
            return;
        };
        let mut state = self.held.lock();
        if matches!(*state, State::Busy) {
            *state = State::Ready(value);
        } else {
            *state = State::Closed;
            drop(state);
            drop(value);
        }
    }
}
