"""session_memory"""
