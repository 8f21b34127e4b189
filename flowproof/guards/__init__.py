"""What guards every boundary flowproof owns: the spellings of a secret, the one redactor, the
listeners' capability and the workflow-command escaping.
"""
