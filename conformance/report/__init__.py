"""From check records to the report: outcomes, judges, report.json/md/html, guidance and what to do next."""
