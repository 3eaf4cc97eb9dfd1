//! ClickHouse's `quantile(level)(x)` as a DataFusion aggregate (`clickhouse_quantile(x, level)`,
//! both `Float64`): the values sorted, the level's position `level * (n - 1)` interpolated
//! linearly between its two neighbours, as ClickHouse interpolates. (DataFusion's
//! `percentile_cont` quantizes the interpolation weight, so its `0.9` of `0..9` is not `8.1`.)
//! Every value is held until the end; the memory pool counts them.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, Float64Type};
use datafusion::common::ScalarValue;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{Accumulator, AggregateUDF, Volatility, create_udaf};

/// The name the query rewrite calls.
pub(super) const NAME: &str = "clickhouse_quantile";

pub(super) fn udaf() -> AggregateUDF {
    create_udaf(
        NAME,
        vec![DataType::Float64, DataType::Float64],
        Arc::new(DataType::Float64),
        Volatility::Immutable,
        Arc::new(|_| Ok(Box::new(Quantile::default()))),
        Arc::new(vec![
            DataType::List(Arc::new(Field::new("item", DataType::Float64, true))),
            DataType::Float64,
        ]),
    )
}

#[derive(Debug, Default)]
struct Quantile {
    values: Vec<f64>,
    level: Option<f64>,
}

/// The `level` quantile of `values`, interpolated; `None` for no values.
pub(super) fn interpolated(values: &mut [f64], level: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let last = (values.len() - 1) as f64;
    let position = (level * last).clamp(0.0, last);
    let lower = position.floor() as usize;
    let upper = (lower + 1).min(values.len() - 1);
    let (a, b) = (values[lower], values[upper]);
    Some(a + (position - lower as f64) * (b - a))
}

impl Accumulator for Quantile {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        let (xs, levels) = (
            values[0].as_primitive::<Float64Type>(),
            values[1].as_primitive::<Float64Type>(),
        );
        if self.level.is_none() {
            self.level = levels.iter().flatten().next();
        }
        self.values.extend(xs.iter().flatten());
        Ok(())
    }

    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        let level = self.level.unwrap_or(0.5);
        Ok(ScalarValue::Float64(interpolated(&mut self.values, level)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.values.capacity() * std::mem::size_of::<f64>()
    }

    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        let values: Vec<ScalarValue> = self
            .values
            .iter()
            .map(|v| ScalarValue::Float64(Some(*v)))
            .collect();
        let list = ScalarValue::new_list_nullable(&values, &DataType::Float64);
        Ok(vec![
            ScalarValue::List(list),
            ScalarValue::Float64(self.level),
        ])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        let lists = states[0].as_list::<i32>();
        for i in 0..lists.len() {
            if lists.is_valid(i) {
                let part = lists.value(i);
                self.values
                    .extend(part.as_primitive::<Float64Type>().iter().flatten());
            }
        }
        if self.level.is_none() {
            self.level = states[1]
                .as_primitive::<Float64Type>()
                .iter()
                .flatten()
                .next();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // chdb: quantile(0.5)(number), quantile(0.9)(number) over numbers(10) are 4.5 and 8.1.
    #[test]
    fn interpolates_as_clickhouse() {
        let mut numbers: Vec<f64> = (0..10).rev().map(f64::from).collect();
        assert_eq!(interpolated(&mut numbers, 0.5), Some(4.5));
        assert_eq!(interpolated(&mut numbers, 0.9), Some(8.1));
        assert_eq!(interpolated(&mut numbers, 0.0), Some(0.0));
        assert_eq!(interpolated(&mut numbers, 1.0), Some(9.0));
        assert_eq!(interpolated(&mut [], 0.5), None);
        assert_eq!(interpolated(&mut [7.0], 0.3), Some(7.0));
    }
}
