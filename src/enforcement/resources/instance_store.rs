//! Instance-store volumes: most GPU instance types (g4dn, g5, g6, p4d, p5 and more) carry
//! NVMe instance-store disks, and stopping the instance erases them
//! (<https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/InstanceStorage.html>: "the data in
//! an instance store persists only during the lifetime of its associated instance … if the
//! instance is stopped … the data is lost"). Reversal cannot bring that data back, so a stop
//! leaves such an instance running, saying why, unless the policy allows it
//! (`stop: {instance_store: allow}`); then the proposal says what will be erased.
//!
//! The sizes come from EC2 itself (`DescribeInstanceTypes`, `InstanceStorageSupported` and
//! `InstanceStorageInfo.TotalSizeInGB`,
//! <https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypes.html>),
//! once per region for the types found, at most 100 types a call, kept with the region's
//! inventory so projects listed together ask once.

use std::collections::HashMap;

use aws_sdk_ec2::types::InstanceType;

use super::inventory::Inventory;
use super::{CallError, Found, Kind};

/// What EC2 says of each type: its instance-store gigabytes (0 for none), or why it did not
/// say (an invalid type, or no permission for `DescribeInstanceTypes`). EC2 refuses the
/// whole call when one type is invalid (`InvalidInstanceType`); then each type is asked
/// alone. Only a passing fault fails the listing.
async fn sizes(ec2: &aws_sdk_ec2::Client, types: &[String]) -> Result<HashMap<String, Result<i64, String>>, CallError> {
    let mut out = HashMap::new();
    for chunk in types.chunks(100) {
        let asked: Vec<&[String]> = match described(ec2, chunk).await {
            Ok(sizes) => {
                out.extend(sizes.into_iter().map(|(t, gb)| (t, Ok(gb))));
                continue;
            }
            Err(err) if err.transient => return Err(err),
            Err(err) if chunk.len() == 1 => {
                out.insert(chunk[0].clone(), Err(err.message));
                continue;
            }
            Err(_) => chunk.chunks(1).collect(),
        };
        for one in asked {
            match described(ec2, one).await {
                Ok(sizes) => out.extend(sizes.into_iter().map(|(t, gb)| (t, Ok(gb)))),
                Err(err) if err.transient => return Err(err),
                Err(err) => {
                    out.insert(one[0].clone(), Err(err.message));
                }
            }
        }
    }
    Ok(out)
}

async fn described(ec2: &aws_sdk_ec2::Client, types: &[String]) -> Result<HashMap<String, i64>, CallError> {
    let mut out = HashMap::new();
    let asked: Vec<InstanceType> = types.iter().map(|t| InstanceType::from(t.as_str())).collect();
    let mut pages = ec2
        .describe_instance_types()
        .set_instance_types(Some(asked))
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| CallError::from_sdk("EC2", "DescribeInstanceTypes", &e))?;
        for info in page.instance_types() {
            let Some(name) = info.instance_type() else { continue };
            let gb = match info.instance_storage_supported() {
                // A type that has instance store but does not say how much: still some.
                Some(true) => info
                    .instance_storage_info()
                    .and_then(|s| s.total_size_in_gb())
                    .unwrap_or(1),
                _ => 0,
            };
            out.insert(name.as_str().to_string(), gb);
        }
    }
    Ok(out)
}

/// What a stop of an instance with `gb` of instance store means: (why it is left running,
/// or what the proposal warns of when the policy allows it).
pub fn erasing(gb: i64, allowed: bool) -> (Option<String>, Option<String>) {
    if allowed {
        let warning = format!(
            "a stop erases its {gb} GB of instance-store (NVMe) data, which reversal cannot bring back; the policy \
             allows it"
        );
        return (None, Some(warning));
    }
    let skip = format!(
        "its type carries {gb} GB of instance-store (NVMe) volumes, whose data a stop erases: left running (a \
         policy may allow it: stop: instance_store: allow)"
    );
    (Some(skip), None)
}

/// Marks the EC2 instances of `found` whose type carries instance store: skipped with why,
/// or (when `allowed`) listed with a warning. A type EC2 does not describe is skipped too:
/// what cannot be checked is not destroyed.
pub async fn judge(inv: &mut Inventory, found: &mut [Found], allowed: bool) -> Result<(), CallError> {
    let mut types: Vec<String> = found
        .iter()
        .filter(|f| f.kind == Kind::Ec2 && f.skip.is_none() && !inv.stores.contains_key(&f.instance_type))
        .map(|f| f.instance_type.clone())
        .collect();
    types.sort();
    types.dedup();
    if !types.is_empty() {
        let asked = sizes(&inv.readers.ec2, &types).await?;
        inv.stores.extend(asked);
    }
    let sizes = &inv.stores;
    for f in found.iter_mut().filter(|f| f.kind == Kind::Ec2 && f.skip.is_none()) {
        match sizes.get(&f.instance_type) {
            Some(Ok(0)) => {}
            Some(Ok(gb)) => (f.skip, f.warning) = erasing(*gb, allowed),
            Some(Err(why)) => {
                f.skip = Some(format!(
                    "whether a stop would erase instance-store data could not be learned ({why}): left running"
                ));
            }
            None => {
                f.skip = Some(format!(
                    "EC2 did not describe instance type {:?}, so whether a stop would erase instance-store data is \
                     unknown: left running",
                    f.instance_type
                ));
            }
        }
    }
    Ok(())
}
