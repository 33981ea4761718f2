"""The trainyard policy pack (see rules.py); a package so preflight can import it as `policies`."""
