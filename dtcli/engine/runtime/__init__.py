"""What runs inside the Spark driver: the plan's refreshes, their strategies, audits and commits."""
