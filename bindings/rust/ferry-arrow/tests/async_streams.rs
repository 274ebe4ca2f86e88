//! Async device streams (README "Async streams"): Rust producers (an
//! iterator through the core's pull-to-push driver; with `futures`, a
//! futures::Stream through the core's sender on a thread of its own) into
//! Rust consumers (the blocking iterator; with `futures`, the Stream woken by
//! the core's readiness callback), with windows, errors both ways, cancel,
//! validation, and release on every path.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferry_arrow::{
    errno, ArrayBuilder, AsyncDeviceStream, Buffer, DeviceArray, DeviceArrayStream, DeviceType, Error, Validation,
};

mod common;
use common::{drop_counted, int_schema};

/// A producer stream of `n` one-value batches (b) that counts the batches
/// it made and is dropped (counted) when the core releases it.
fn counted(n: i32, made: Arc<AtomicUsize>, dropped: Arc<AtomicUsize>) -> DeviceArrayStream {
    let batches = drop_counted(
        &dropped,
        (0..n).map(move |b| {
            made.fetch_add(1, Ordering::SeqCst);
            Ok(ArrayBuilder::new(1)
                .buffer(Buffer::null())
                .buffer(Buffer::from_vec(vec![b])))
        }),
    );
    DeviceArrayStream::from_iter(DeviceType::CPU, batches, int_schema()).unwrap()
}

fn first_value(batch: &DeviceArray) -> i32 {
    batch.host(&int_schema()).unwrap().value::<i32>(0).unwrap()
}

#[test]
fn an_iterator_pushed_into_the_blocking_iterator_for_windows_1_and_4() {
    for window in [1, 4] {
        let (made, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let mut consumer = AsyncDeviceStream::new(window).unwrap();
        unsafe { counted(20, made.clone(), dropped.clone()).export_async(consumer.handler()) }.unwrap();
        let schema = consumer.schema().unwrap();
        assert_eq!((schema.format(), schema.name()), ("i", Some("n")));
        assert_eq!(consumer.device_type(), DeviceType::CPU);
        let mut seen = Vec::new();
        for batch in consumer.by_ref() {
            let batch = batch.unwrap();
            // Back-pressure: the producer is never more than the window
            // (plus the batch in hand) ahead of the reader.
            assert!(
                made.load(Ordering::SeqCst) <= seen.len() + 1 + window as usize,
                "window {window}"
            );
            seen.push(first_value(&batch));
        }
        assert_eq!(seen, (0..20).collect::<Vec<_>>(), "window {window}");
        assert!(consumer.next().is_none(), "the end stays the end");
        assert!(consumer.wait_released(Some(Duration::from_secs(10))));
        assert_eq!(consumer.violations(), 0);
        drop(consumer);
        assert_eq!(dropped.load(Ordering::SeqCst), 1, "the producer is released once");
    }
}

#[test]
fn export_async_run_pushes_on_the_calling_thread() {
    let (made, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut consumer = AsyncDeviceStream::new(2).unwrap();
    let handler = consumer.handler() as usize;
    let stream = counted(5, made, dropped.clone());
    let producer = std::thread::spawn(move || unsafe {
        stream.export_async_run(handler as *mut ferry_arrow::sys::ArrowAsyncDeviceStreamHandler)
    });
    let values: Vec<i32> = consumer.by_ref().map(|b| first_value(&b.unwrap())).collect();
    assert_eq!(values, vec![0, 1, 2, 3, 4]);
    producer.join().unwrap().unwrap();
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
}

#[test]
fn a_producer_error_reaches_the_consumer_and_stays() {
    let batches = vec![
        Ok(ArrayBuilder::new(1)
            .buffer(Buffer::null())
            .buffer(Buffer::from_vec(vec![7i32]))),
        Err(Error::new(errno::ENOMEM, "no room for batch 2")),
        Ok(ArrayBuilder::new(1)
            .buffer(Buffer::null())
            .buffer(Buffer::from_vec(vec![9i32]))),
    ];
    let producer = DeviceArrayStream::from_iter(DeviceType::CPU, batches, int_schema()).unwrap();
    let mut consumer = AsyncDeviceStream::new(4).unwrap();
    unsafe { producer.export_async(consumer.handler()) }.unwrap();
    assert_eq!(first_value(&consumer.next().unwrap().unwrap()), 7);
    let err = consumer.next().unwrap().unwrap_err();
    assert_eq!(err.code(), errno::ENOMEM, "{err}");
    assert!(err.message().contains("no room for batch 2"), "{err}");
    for _ in 0..3 {
        assert_eq!(consumer.next().unwrap().unwrap_err(), err, "the same error again");
    }
}

#[test]
fn a_batch_that_fails_validation_is_refused() {
    // int32 needs two buffers; this batch has one.
    let batches = vec![Ok(ArrayBuilder::new(1).buffer(Buffer::from_vec(vec![1i32])))];
    let make = || DeviceArrayStream::from_iter(DeviceType::CPU, batches.clone_batches(), int_schema()).unwrap();
    let mut checked = AsyncDeviceStream::new(1).unwrap();
    unsafe { make().export_async(checked.handler()) }.unwrap();
    let err = checked.next_array().unwrap_err();
    assert!(err.is_invalid_argument(), "{err}");
    assert_eq!(checked.next_array().unwrap_err(), err);

    let mut unchecked = AsyncDeviceStream::with_validation(1, Validation::None).unwrap();
    unsafe { make().export_async(unchecked.handler()) }.unwrap();
    let batch = unchecked.next_array().unwrap().unwrap();
    assert!(
        batch.validate(&int_schema(), false).is_err(),
        "handed out unvalidated, as asked"
    );
}

/// Rebuilds the one-buffer batch list (builders are not Clone).
trait CloneBatches {
    fn clone_batches(&self) -> Vec<ferry_arrow::Result<ArrayBuilder>>;
}
impl CloneBatches for Vec<ferry_arrow::Result<ArrayBuilder>> {
    fn clone_batches(&self) -> Vec<ferry_arrow::Result<ArrayBuilder>> {
        vec![Ok(ArrayBuilder::new(1).buffer(Buffer::from_vec(vec![1i32])))]
    }
}

#[test]
fn cancel_stops_the_producer_and_releases_it() {
    let (made, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut consumer = AsyncDeviceStream::new(2).unwrap();
    unsafe { counted(1_000_000, made.clone(), dropped.clone()).export_async(consumer.handler()) }.unwrap();
    assert_eq!(first_value(&consumer.next().unwrap().unwrap()), 0);
    consumer.cancel();
    let err = consumer.next().unwrap().unwrap_err();
    assert_eq!(err.code(), errno::ECANCELED, "{err}");
    assert!(
        consumer.wait_released(Some(Duration::from_secs(10))),
        "released after the cancel"
    );
    assert!(made.load(Ordering::SeqCst) < 10, "the producer stopped");
    drop(consumer);
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
}

#[test]
fn dropping_a_consumer_mid_stream_or_unused_ends_everything() {
    // Never handed to a producer.
    drop(AsyncDeviceStream::new(3).unwrap());
    // Handed out, then dropped with batches queued and the producer running.
    let (made, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut consumer = AsyncDeviceStream::new(4).unwrap();
    unsafe { counted(1_000_000, made, dropped.clone()).export_async(consumer.handler()) }.unwrap();
    consumer.next().unwrap().unwrap();
    drop(consumer); // cancels; waits for the release (bounded)
    assert_eq!(dropped.load(Ordering::SeqCst), 1, "the producer was released");
}

#[test]
fn a_window_of_zero_is_refused() {
    let err = AsyncDeviceStream::new(0).unwrap_err();
    assert!(
        err.is_invalid_argument() && err.message().contains("at least 1"),
        "{err}"
    );
}

#[test]
fn the_consumer_moves_between_threads() {
    let (made, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut consumer = AsyncDeviceStream::new(1).unwrap();
    unsafe { counted(6, made, dropped).export_async(consumer.handler()) }.unwrap();
    let values = std::thread::spawn(move || consumer.map(|b| first_value(&b.unwrap())).collect::<Vec<_>>())
        .join()
        .unwrap();
    assert_eq!(values, (0..6).collect::<Vec<_>>());
}

#[cfg(feature = "futures")]
mod futures_tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll, Wake, Waker};

    use futures_core::Stream;

    use super::*;

    /// A minimal executor: polls `f` on this thread, parking until woken.
    fn block_on<F: Future>(f: F) -> F::Output {
        struct Unpark(std::thread::Thread);
        impl Wake for Unpark {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker: Waker = Arc::new(Unpark(std::thread::current())).into();
        let mut cx = Context::from_waker(&waker);
        let mut f = Box::pin(f);
        loop {
            if let Poll::Ready(out) = f.as_mut().poll(&mut cx) {
                return out;
            }
            std::thread::park();
        }
    }

    /// `stream.next().await` without futures-util.
    struct Next<'a, S>(&'a mut S);
    impl<S: Stream + Unpin> Future for Next<'_, S> {
        type Output = Option<S::Item>;
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            Pin::new(&mut *self.0).poll_next(cx)
        }
    }

    /// A futures::Stream of `n` one-value batches that is Pending before
    /// each item and wakes itself from another thread (as an async source
    /// would), counting its polls.
    struct Source {
        next: i32,
        n: i32,
        ready: Arc<Mutex<bool>>,
    }
    impl Stream for Source {
        type Item = ferry_arrow::Result<ArrayBuilder>;
        fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            let mut ready = self.ready.lock().unwrap();
            if !*ready {
                let (flag, waker) = (self.ready.clone(), cx.waker().clone());
                drop(ready);
                std::thread::spawn(move || {
                    *flag.lock().unwrap() = true;
                    waker.wake();
                });
                return Poll::Pending;
            }
            *ready = false;
            drop(ready);
            if self.next == self.n {
                return Poll::Ready(None);
            }
            if self.next == 1_000 {
                return Poll::Ready(Some(Err(Error::io("the source broke"))));
            }
            let b = self.next;
            self.next += 1;
            Poll::Ready(Some(Ok(ArrayBuilder::new(1)
                .buffer(Buffer::null())
                .buffer(Buffer::from_vec(vec![b])))))
        }
    }

    fn source(n: i32) -> Source {
        Source {
            next: 0,
            n,
            ready: Arc::new(Mutex::new(false)),
        }
    }

    #[test]
    fn a_futures_stream_pushed_into_a_futures_consumer() {
        let mut consumer = AsyncDeviceStream::new(3).unwrap();
        unsafe { ferry_arrow::export_async_stream(consumer.handler(), DeviceType::CPU, source(12), int_schema()) }
            .unwrap();
        let values = block_on(async {
            let mut values = Vec::new();
            while let Some(batch) = Next(&mut consumer).await {
                values.push(first_value(&batch.unwrap()));
            }
            values
        });
        assert_eq!(values, (0..12).collect::<Vec<_>>());
        assert!(consumer.wait_released(Some(Duration::from_secs(10))));
        assert_eq!(consumer.violations(), 0);
    }

    #[test]
    fn an_error_item_of_a_futures_stream_becomes_the_consumers_error() {
        let mut failing = source(2_000);
        failing.next = 998; // 998, 999, then the error
        let mut consumer = AsyncDeviceStream::new(1).unwrap();
        unsafe { ferry_arrow::export_async_stream(consumer.handler(), DeviceType::CPU, failing, int_schema()) }
            .unwrap();
        let got = block_on(async {
            let mut got = Vec::new();
            while let Some(batch) = Next(&mut consumer).await {
                match batch {
                    Ok(b) => got.push(Ok(first_value(&b))),
                    Err(e) => {
                        got.push(Err(e));
                        break;
                    }
                }
            }
            got
        });
        assert_eq!(got.len(), 3, "{got:?}");
        let err = got[2].as_ref().unwrap_err();
        assert_eq!(err.code(), errno::EIO);
        assert!(err.message().contains("the source broke"), "{err}");
        // The blocking reader sees the same error afterwards.
        assert_eq!(consumer.next_array().unwrap_err(), *err);
    }

    #[test]
    fn an_iterator_producer_into_a_futures_consumer() {
        let (made, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let mut consumer = AsyncDeviceStream::new(2).unwrap();
        unsafe { counted(8, made, dropped).export_async(consumer.handler()) }.unwrap();
        let sum = block_on(async {
            let mut sum = 0;
            while let Some(batch) = Next(&mut consumer).await {
                sum += first_value(&batch.unwrap());
            }
            sum
        });
        assert_eq!(sum, (0..8).sum::<i32>());
    }
}
