"""Forms: they validate input only. Saving is done by ``core.actions`` called from the views."""

from __future__ import annotations

from typing import Any, BinaryIO, cast

from django import forms
from django.conf import settings
from django.contrib.auth import password_validation
from django.contrib.auth.forms import AuthenticationForm
from django.core.files.uploadedfile import UploadedFile

from agent_uploads.python_check import first_error_in, first_syntax_error
from agent_uploads.upload import read_upload
from agent_uploads.zip_validation import DirectoryRefused, UnreadableUpload, ValidatedZip, ValidationError
from core.actions.submissions import upload_limits
from core.models import Competitor, Environment, User
from core.models.competitor import NAME_VALIDATOR

#: The upload's ``agent_format`` choices (``run_duel.agent_formats.CHOICES``).
AGENT_FORMAT_CHOICES = [
    ("auto", "Detect it"),
    ("native", "Native: this arena's Player (or a Kaggle agent)"),
    ("rl-arena", "rl-arena: a Player written for the original rl-arena"),
    ("kaggle", "Kaggle agent"),
]


GITHUB_FIELD: dict[str, Any] = {
    "regex": r"^$|^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$",
    "max_length": 39,
    "required": False,
    "label": "GitHub user name",
    "error_messages": {"invalid": "Not a valid GitHub user name."},
}


class SignupForm(forms.Form):
    """A new account: e-mail (the login), password twice, and the public profile."""

    email = forms.EmailField(label="E-mail address", widget=forms.EmailInput(attrs={"autocomplete": "email"}))
    display_name = forms.CharField(
        max_length=80,
        required=False,
        help_text="Shown to others instead of your e-mail address. Left empty, you appear under your GitHub "
        'user name, or else under a name such as "Swift Otter 12"; change it any time in your profile.',
    )
    team = forms.CharField(max_length=80, required=False)
    github = forms.RegexField(**GITHUB_FIELD)  # may become the public name: never an e-mail address
    password1 = forms.CharField(
        label="Password", strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "new-password"})
    )
    password2 = forms.CharField(
        label="Password again",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def clean_email(self) -> str:
        """Lower-cased, and not already registered."""
        email = self.cleaned_data["email"].strip().lower()
        if User.objects.filter(email__iexact=email).exists():
            raise forms.ValidationError("An account with this e-mail address already exists.")
        return email

    def clean(self) -> dict[str, Any]:
        """Both passwords match and pass the configured validators."""
        super().clean()
        data = self.cleaned_data
        p1, p2 = data.get("password1"), data.get("password2")
        if p1 and p2 and p1 != p2:
            self.add_error("password2", "The two passwords differ.")
        elif p1:
            probe = User(email=data.get("email") or "", display_name=data.get("display_name") or "")
            try:
                password_validation.validate_password(p1, probe)
            except forms.ValidationError as exc:
                self.add_error("password1", exc)
        return data


class LoginForm(AuthenticationForm):
    """Log in with e-mail and password."""

    username = forms.EmailField(
        label="E-mail address", widget=forms.EmailInput(attrs={"autofocus": True, "autocomplete": "email"})
    )


class ProfileForm(forms.Form):
    """The public profile of the logged-in user."""

    display_name = forms.CharField(
        max_length=80,
        required=False,
        help_text="Shown to others instead of your e-mail address. Left empty, you appear under your GitHub "
        'user name, or else under a name such as "Swift Otter 12".',
    )
    team = forms.CharField(max_length=80, required=False)
    github = forms.RegexField(**GITHUB_FIELD)
    email_notifications = forms.BooleanField(
        required=False,
        label="E-mail me notifications",
        help_text="Failed revisions, paused competitors, finished tournaments (always shown on the site).",
    )


class GameChoiceField(forms.ModelChoiceField):
    """A game, shown by its name."""

    def label_from_instance(self, obj: Environment) -> str:
        return obj.name


class UploadForm(forms.Form):
    """A zip holding ``player.py``: a new competitor, or a new revision of one of yours (same name)."""

    environment = GameChoiceField(
        queryset=Environment.objects.filter(is_active=True).order_by("name"),
        to_field_name="slug",
        empty_label=None,
        label="Game",
    )
    name = forms.CharField(
        max_length=64,
        validators=[NAME_VALIDATOR],
        label="Competitor name",
        help_text="A new name creates a competitor; one of your existing names adds a revision to it.",
        widget=forms.TextInput(attrs={"list": "my-names", "autocomplete": "off"}),
    )
    file = forms.FileField(
        label="Agent zip",
        widget=forms.ClearableFileInput(attrs={"accept": ".zip,application/zip"}),
    )
    is_public = forms.BooleanField(
        required=False,
        label="Publish the source",
        help_text="Public sources can be downloaded by anyone and are pushed to the public repository.",
    )
    wipe_data = forms.BooleanField(
        required=False,
        label="Start this revision with an empty data folder",
        help_text="For a new revision of an existing competitor: the data its earlier revisions stored "
        "($ARENA_DATA_DIR) is deleted when this one starts playing. Unticked, it carries on with that data.",
    )
    agent_format = forms.ChoiceField(
        choices=AGENT_FORMAT_CHOICES,
        initial="auto",
        required=False,  # left out: detected
        label="Agent format",
        help_text="Detected unless you choose: an agent written for the original rl-arena (environment.yml "
        "next to player.py) gets that project's states and actions in Tic-tac-toe, Connect Four and Quarto.",
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        limit = settings.SUBMISSION_MAX_BYTES
        self.fields["file"].help_text = (
            f"A .zip of at most {limit // (1024 * 1024)} MB with player.py at its top (or in one folder), "
            "optionally requirements.txt and the files it loads."
        )
        # upload.js refuses a larger file before sending it.
        self.fields["file"].widget.attrs["data-max-bytes"] = str(limit)

    #: The upload read and validated by ``clean_file`` (``None``: refused further on, by the action).
    validated: ValidatedZip | None = None

    def clean_file(self) -> UploadedFile:
        """Reject obviously wrong files before anything is stored (the builder checks the contents)."""
        upload: UploadedFile = self.cleaned_data["file"]
        try:
            self.validated = check_upload(upload)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        return upload


def check_upload(upload: UploadedFile) -> ValidatedZip | None:
    """Size, zip signature, the zip's directory and Python syntax of an uploaded agent (the form and the
    API share it), from the one read of the upload (``agent_uploads.upload.read_upload``).

    Raises ``ValueError`` with a sentence for the uploader. Returns the validated zip, to hand to
    ``core.actions.submit_revision`` (which then does not read it again), or ``None`` when the validator
    refuses it for its structure: the action says why, after the name and game, as it always did.
    """
    cap, size = settings.SUBMISSION_MAX_BYTES, upload.size or 0
    if size > cap:
        size_mb, cap_mb = size / (1024 * 1024), cap // (1024 * 1024)
        raise ValueError(f"The file is {size_mb:.0f} MB, larger than the {cap_mb} MB limit.")
    head = upload.read(4)
    upload.seek(0)
    if head[:2] != b"PK":
        raise ValueError("This is not a zip file (zip files start with 'PK').")
    try:  # the directory is streamed first: a hostile one is refused in bounded memory and time
        validated = read_upload(cast(BinaryIO, upload), upload_limits())
    except (DirectoryRefused, UnreadableUpload) as exc:
        raise ValueError(f"This zip cannot be accepted: {exc}.") from None
    except ValidationError:
        validated = None
    # A refused zip's syntax error is still told first (its sources read from the raw zip).
    error = first_syntax_error(upload) if validated is None else first_error_in(validated)
    if error:
        raise ValueError(f"Python cannot compile your agent: {error}")
    return validated


def my_competitor_names(user: User, environment: Environment | None = None) -> list[str]:
    """Names of the user's competitors (optionally in one game), for the upload page's suggestions."""
    qs = Competitor.objects.filter(owner=user)
    if environment is not None:
        qs = qs.filter(environment=environment)
    return list(qs.order_by("name").values_list("name", flat=True))
