"""The fabric sizer (fabric/sizing.py, ``mrcctl plan``) against numbers worked out by hand.

Every expected value is a written-out literal; the comment beside it is the arithmetic
(R = radix, h = R/2, L = ceil(N/h) leaves, tiers below the top have L switches each, the
top ceil(L/2); links (k-1)*L*h per plane; transceivers per switch and direction
ceil(ports / lanes), lanes = planes in the multiplane design, 1 in the single plane).
"""

from __future__ import annotations

import json

import pytest

from fabric.sizing import SizingError, rows, size

ISSUE = dict(nic_gbps=800, planes=8, port_gbps=100, radix=512)


def test_acceptance_131072_gpus() -> None:
    report = size(131_072, **ISSUE)
    assert report.to_json() == {
        "multiplane": {
            # R = 512, h = 256: two tiers hold 512 * 256 = 131,072 = N, exactly full.
            "tiers": 2,
            # L = 131,072 / 256 = 512 leaves, ceil(512 / 2) = 256 spines; 8 * (512 + 256).
            "switches": 6_144,
            "switches_per_tier": [512, 256],
            # 8 planes * 512 leaves * 256 uplinks = 8 * 131,072.
            "fabric_links": 1_048_576,
            # one 100G link per GPU per plane: 8 * 131,072.
            "host_links": 1_048_576,
            # per plane: leaves 512 * 256/8 = 16,384, spines 256 * 512/8 = 16,384 -> 32,768;
            # 8 planes: 262,144 (= 2 * 1,048,576 link ends / 8 lanes).
            "transceivers": 262_144,
        },
        "single_plane": {
            # R = 64 (512 x 100G = 64 x 800G), h = 32: 1 tier 64, 2 tiers 64*32 = 2,048,
            # 3 tiers 64*32^2 = 65,536 < 131,072; 4 tiers 64*32^3 = 2,097,152 >= N.
            "tiers": 4,
            # L = 131,072 / 32 = 4,096 in tiers 1..3, top 4,096 / 2 = 2,048: 3 * 4,096 + 2,048.
            "switches": 14_336,
            "switches_per_tier": [4_096, 4_096, 4_096, 2_048],
            # (4 - 1) boundaries * 4,096 * 32.
            "fabric_links": 393_216,
            "host_links": 131_072,
            # one per link end: 2 * 393,216.
            "transceivers": 786_432,
        },
        "savings": {
            # (14,336 - 6,144) / 14,336 = 8,192 / 14,336 = 57.14 %.
            "switches": 57.1,
            # (786,432 - 262,144) / 786,432 = 2/3.
            "transceivers": 66.7,
            # hops 2*2-1 = 3 against 2*4-1 = 7: 4/7 = 57.14 %.
            "switch_hops": 57.1,
        },
    }
    assert (report.multiplane.switch_hops, report.single_plane.switch_hops) == (3, 7)
    # The single plane needs more tiers and more switches (the issue's acceptance).
    assert report.single_plane.tiers > report.multiplane.tiers
    assert report.single_plane.switches > report.multiplane.switches
    assert report.notes() == [
        "single plane: 131,072 GPUs do not fit two tiers of 64-port switches (at most 2,048); it needs 4 tiers"
    ]


def test_131073_gpus_no_longer_fit_two_tiers() -> None:
    report = size(131_073, **ISSUE)
    assert report.to_json() == {
        "multiplane": {
            # 131,073 > 131,072: three tiers (512 * 256^2 = 33,554,432).
            "tiers": 3,
            # L = ceil(131,073 / 256) = 513 (512 * 256 = 131,072, one GPU over), 513 in
            # tier 2, top ceil(513 / 2) = 257: 8 * (513 + 513 + 257) = 8 * 1,283.
            "switches": 10_264,
            "switches_per_tier": [513, 513, 257],
            # 8 * 2 boundaries * 513 * 256 = 8 * 262,656.
            "fabric_links": 2_101_248,
            "host_links": 1_048_584,  # 8 * 131,073
            # per plane: leaves 513 * 32 = 16,416; tier 2 513 * (32 down + 32 up) = 32,832;
            # top: 513 * 256 = 131,328 ports over 257 switches = 511 each and 1 left over,
            # so one switch with 512 ports (64 modules), 256 with 511 (ceil(511/8) = 64):
            # 257 * 64 = 16,448. Sum 65,696; 8 planes: 525,568.
            "transceivers": 525_568,
        },
        "single_plane": {
            # 65,536 < 131,073 <= 2,097,152: four tiers.
            "tiers": 4,
            # L = ceil(131,073 / 32) = 4,097; top ceil(4,097 / 2) = 2,049: 3 * 4,097 + 2,049.
            "switches": 14_340,
            "switches_per_tier": [4_097, 4_097, 4_097, 2_049],
            "fabric_links": 393_312,  # 3 * 4,097 * 32
            "host_links": 131_073,
            "transceivers": 786_624,  # 2 * 393,312
        },
        "savings": {
            "switches": 28.4,  # 4,076 / 14,340 = 28.42 %
            "transceivers": 33.2,  # 261,056 / 786,624 = 33.19 %
            "switch_hops": 28.6,  # 5 against 7: 2/7 = 28.57 %
        },
    }
    assert report.notes() == [
        "multiplane: 131,073 GPUs do not fit two tiers of 512-port switches (at most 131,072); it needs 3 tiers",
        "single plane: 131,073 GPUs do not fit two tiers of 64-port switches (at most 2,048); it needs 4 tiers",
    ]


def test_1000_gpus_both_designs_come_out_even() -> None:
    report = size(1_000, **ISSUE)
    multi, single = report.multiplane, report.single_plane
    # Multiplane: 1,000 > 512 (one switch): two tiers; L = ceil(1,000 / 256) = 4, 2 spines.
    assert (multi.tiers, multi.switches_per_tier, multi.switches) == (2, (4, 2), 48)
    # Single plane: 64 < 1,000 <= 2,048: two tiers; L = ceil(1,000 / 32) = 32 (31.25), 16 spines.
    assert (single.tiers, single.switches_per_tier, single.switches) == (2, (32, 16), 48)
    # Links: 8 * 4 * 256 = 8,192 x 100G against 32 * 32 = 1,024 x 800G (the same bandwidth).
    assert (multi.fabric_links, single.fabric_links) == (8_192, 1_024)
    assert (multi.host_links, single.host_links) == (8_000, 1_000)
    # Transceivers: per plane 4 * 32 + 2 * (512 / 8) = 256, * 8 = 2,048; single 2 * 1,024.
    assert (multi.transceivers, single.transceivers) == (2_048, 2_048)
    assert report.savings.to_json() == {"switches": 0.0, "transceivers": 0.0, "switch_hops": 0.0}
    assert report.notes() == []


@pytest.mark.parametrize("gpus", [1, 33])
def test_one_switch_per_plane_costs_more_than_one_switch(gpus: int) -> None:
    report = size(gpus, **ISSUE)
    # gpus <= 64 <= 512: one tier both ways; one switch per plane (8) against one switch.
    assert report.to_json() == {
        "multiplane": {
            "tiers": 1,
            "switches": 8,
            "switches_per_tier": [1],
            "fabric_links": 0,
            "host_links": 8 * gpus,
            "transceivers": 0,
        },
        "single_plane": {
            "tiers": 1,
            "switches": 1,
            "switches_per_tier": [1],
            "fabric_links": 0,
            "host_links": gpus,
            "transceivers": 0,
        },
        # (1 - 8) / 1 = -700 %; no transceivers either way; 1 hop both ways.
        "savings": {"switches": -700.0, "transceivers": 0.0, "switch_hops": 0.0},
    }


@pytest.mark.parametrize(
    ("gpus", "multi_tiers", "single_tiers"),
    [
        (64, 1, 1),  # single switch of 64 ports holds 64
        (65, 1, 2),
        (512, 1, 2),  # one 512-port switch; 512 <= 2,048
        (513, 2, 2),
        (2_048, 2, 2),  # 64 * 32
        (2_049, 2, 3),
        (65_536, 2, 3),  # 64 * 32^2
        (65_537, 2, 4),
        (2_097_152, 3, 4),  # 64 * 32^3; 512 * 256 < it <= 512 * 256^2
        (2_097_153, 3, 5),
        (33_554_432, 3, 5),  # 512 * 256^2
        (33_554_433, 4, 5),
    ],
)
def test_tiers_at_the_capacity_boundaries(gpus: int, multi_tiers: int, single_tiers: int) -> None:
    report = size(gpus, **ISSUE)
    assert (report.multiplane.tiers, report.single_plane.tiers) == (multi_tiers, single_tiers)


def test_transceiver_rule_part_filled_top_tier() -> None:
    # 1,100 GPUs: L = ceil(1,100 / 256) = 5 leaves (4 would hold 1,024), 3 spines.
    multi = size(1_100, **ISSUE).multiplane
    assert multi.switches_per_tier == (5, 3)
    assert multi.fabric_links == 8 * 1_280  # 5 * 256 uplinks per plane
    # Per plane: leaves 5 * 256/8 = 160. Spines: 1,280 ports over 3 = 427, 427, 426
    # -> ceil(427/8) = 54, 54, ceil(426/8) = 54 = 162 (not 1,280/8 = 160: a module's
    # lanes serve one switch). 322 per plane, 8 planes.
    assert multi.transceivers == 2_576
    # Single plane: one transceiver per link end. L = ceil(1,100 / 32) = 35, 18 spines.
    single = size(1_100, **ISSUE).single_plane
    assert (single.switches_per_tier, single.fabric_links, single.transceivers) == ((35, 18), 1_120, 2_240)


def test_host_links_are_not_counted_as_transceivers() -> None:
    # 1,000 and 1,024 GPUs need the same 32 leaves (32 * 32 = 1,024) of the single plane:
    # the host links differ, the transceivers (2 * 32 * 32 link ends) do not.
    few, full = size(1_000, **ISSUE).single_plane, size(1_024, **ISSUE).single_plane
    assert (few.host_links, full.host_links) == (1_000, 1_024)
    assert few.transceivers == full.transceivers == 2_048
    # One GPU more needs a 33rd leaf and a 17th spine: 33 * 32 links, 2 ends each.
    more = size(1_025, **ISSUE).single_plane
    assert (more.switches_per_tier, more.transceivers) == ((33, 17), 2_112)


def test_published_ratios_400g_nics_against_three_tiers() -> None:
    # 400G NIC as 4 x 100G, 256-port (25.6T) switches; single plane: 64 x 400G.
    report = size(32_768, nic_gbps=400, planes=4, port_gbps=100, radix=256)
    multi, single = report.multiplane, report.single_plane
    # Multiplane: 256 * 128 = 32,768: two tiers, 256 leaves + 128 spines, 4 planes.
    assert (multi.tiers, multi.switches_per_tier, multi.switches) == (2, (256, 128), 1_536)
    # Single: 2,048 < 32,768 <= 65,536: three tiers, L = 32,768 / 32 = 1,024, top 512.
    assert (single.tiers, single.switches_per_tier, single.switches) == (3, (1_024, 1_024, 512), 2_560)
    # 1,536 / 2,560 = 3/5 of the switches of three tiers (the published figure).
    assert report.savings.switches == 40.0
    # Transceivers: multiplane 4 * 2 * 32,768 link ends / 4 lanes = 65,536; single
    # 2 * 2 * 1,024 * 32 = 131,072. With each GPU's host link counted as one module at
    # each end (2 * 32,768 both ways): 131,072 / 196,608 = 2/3 of the optics (published).
    assert (multi.transceivers, single.transceivers) == (65_536, 131_072)
    assert report.savings.transceivers == 50.0
    assert (multi.switch_hops, single.switch_hops) == (3, 5)


def test_one_plane_is_the_single_plane() -> None:
    report = size(5_000, nic_gbps=800, planes=1, port_gbps=800, radix=64)
    assert report.to_json()["multiplane"] == report.to_json()["single_plane"] == {
        "tiers": 3,  # 2,048 < 5,000 <= 65,536
        "switches": 393,  # L = ceil(5,000 / 32) = 157 twice, top ceil(157 / 2) = 79: 157 + 157 + 79
        "switches_per_tier": [157, 157, 79],
        "fabric_links": 10_048,  # 2 * 157 * 32
        "host_links": 5_000,
        "transceivers": 20_096,  # 2 * 10,048
    }
    assert report.savings.to_json() == {"switches": 0.0, "transceivers": 0.0, "switch_hops": 0.0}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            dict(gpus=1_000, nic_gbps=800, planes=8, port_gbps=300, radix=512),
            "--nic-gbps 800 is not a multiple of --port-gbps 300: a NIC splits into whole ports; "
            "choose a --port-gbps that divides 800",
        ),
        (
            dict(gpus=1_000, nic_gbps=800, planes=4, port_gbps=100, radix=512),
            "--planes 4 x --port-gbps 100 = 400 Gb/s is not --nic-gbps 800: each NIC port goes to "
            "its own plane; use --planes 8",
        ),
        (
            dict(gpus=1_000, nic_gbps=800, planes=8, port_gbps=100, radix=511),
            "--radix 511 must be even and at least 4: a leaf uses half its ports down, half up",
        ),
        (
            dict(gpus=1_000, nic_gbps=800, planes=8, port_gbps=100, radix=2),
            "--radix 2 must be even and at least 4: a leaf uses half its ports down, half up",
        ),
        (
            dict(gpus=1_000, nic_gbps=800, planes=8, port_gbps=100, radix=100),
            "--radix 100 ports of 100G do not make a 800G switch for the single-plane comparison "
            "(--radix / --planes = 25/2 ports, needs an even number of at least 4): use a --radix "
            "that is a multiple of 16 and at least 32",
        ),
        (
            dict(gpus=1_000, nic_gbps=800, planes=8, port_gbps=100, radix=16),
            "--radix 16 ports of 100G do not make a 800G switch for the single-plane comparison "
            "(--radix / --planes = 2 ports, needs an even number of at least 4): use a --radix "
            "that is a multiple of 16 and at least 32",
        ),
        (dict(gpus=0, **ISSUE), "--gpus must be a positive whole number, got 0"),
        (dict(gpus=-5, **ISSUE), "--gpus must be a positive whole number, got -5"),
        (dict(gpus=True, **ISSUE), "--gpus must be a positive whole number, got True"),
        (dict(gpus=10.5, **ISSUE), "--gpus must be a positive whole number, got 10.5"),
        (
            dict(gpus=10, nic_gbps=0, planes=8, port_gbps=100, radix=512),
            "--nic-gbps must be a positive whole number, got 0",
        ),
        (
            dict(gpus=10, nic_gbps=800, planes=-8, port_gbps=100, radix=512),
            "--planes must be a positive whole number, got -8",
        ),
        (
            dict(gpus=10, nic_gbps=800, planes=8, port_gbps=0, radix=512),
            "--port-gbps must be a positive whole number, got 0",
        ),
        (
            dict(gpus=10, nic_gbps=800, planes=8, port_gbps=100, radix=-512),
            "--radix must be a positive whole number, got -512",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_option(args: dict[str, object], message: str) -> None:
    with pytest.raises(SizingError) as caught:
        size(**args)  # type: ignore[arg-type]
    assert str(caught.value) == message
    assert "\n" not in message


def test_json_is_plain_data_with_the_issue_keys() -> None:
    data = json.loads(json.dumps(size(131_072, **ISSUE).to_json()))
    assert set(data) == {"multiplane", "single_plane", "savings"}
    for design in ("multiplane", "single_plane"):
        assert set(data[design]) == {
            "tiers",
            "switches",
            "switches_per_tier",
            "fabric_links",
            "host_links",
            "transceivers",
        }


def test_rows() -> None:
    report = size(131_072, **ISSUE)
    assert rows(report) == [
        ("tiers", "2", "4", ""),
        ("worst-case switch hops", "3", "7", "57.1%"),
        ("planes", "8", "1", ""),
        ("switch", "512 x 100G", "64 x 800G", ""),
        ("leaf switches per plane", "512", "4,096", ""),
        ("spine switches per plane", "256", "4,096", ""),
        ("super-spine switches per plane", "-", "4,096", ""),
        ("tier 4 switches per plane", "-", "2,048", ""),
        ("switches", "6,144", "14,336", "57.1%"),
        ("switch-to-switch links", "1,048,576 x 100G", "393,216 x 800G", ""),
        ("host links", "1,048,576 x 100G", "131,072 x 800G", ""),
        ("transceivers (800G)", "262,144", "786,432", "66.7%"),
    ]
