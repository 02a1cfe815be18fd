"""A concrete schedule's NoC traffic: its transfers (``transfers.py``), routed and totalled (``loads.py``)."""

from loom_explorer.traffic.loads import BankLoad, LinkLoad, TrafficReport, route_loads, traffic_report
from loom_explorer.traffic.transfers import Transfer, schedule_transfers, used_cores

__all__ = [
    "BankLoad",
    "LinkLoad",
    "TrafficReport",
    "Transfer",
    "route_loads",
    "schedule_transfers",
    "traffic_report",
    "used_cores",
]
