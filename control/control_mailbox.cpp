#include "control/control_mailbox.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/check.h"

namespace tl::control {

namespace detail {

Mailbox::Mailbox() {
  int fds[2];
  TL_CHECK(::pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0, std::strerror(errno));
  wakeRead.reset(fds[0]);
  wakeWrite.reset(fds[1]);
}

void Mailbox::wake() {
  const char byte = 1;
  (void)!::write(wakeWrite.get(), &byte, 1);  // full pipe: a wake-up is pending anyway
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// PendingRequest

PendingRequest::PendingRequest(Request request, uint64_t connection,
                               std::shared_ptr<detail::Mailbox> mailbox)
    : request_(std::move(request)),
      connection_(connection),
      mailbox_(std::move(mailbox)),
      replied_(false) {}

PendingRequest::PendingRequest(PendingRequest&& other) noexcept
    : request_(std::move(other.request_)),
      connection_(other.connection_),
      mailbox_(std::move(other.mailbox_)),
      replied_(other.replied_) {
  other.replied_ = true;
}

PendingRequest& PendingRequest::operator=(PendingRequest&& other) noexcept {
  if (this != &other) {
    if (!replied_) reply({Outcome::Failed, "the job dropped the request without an answer", ""});
    request_ = std::move(other.request_);
    connection_ = other.connection_;
    mailbox_ = std::move(other.mailbox_);
    replied_ = other.replied_;
    other.replied_ = true;
  }
  return *this;
}

PendingRequest::~PendingRequest() {
  if (!replied_) reply({Outcome::Failed, "the job dropped the request without an answer", ""});
}

void PendingRequest::reply(Reply r) {
  if (replied_ || !mailbox_) return;
  replied_ = true;
  std::lock_guard<std::mutex> lock(mailbox_->mu);
  if (!mailbox_->open) return;
  mailbox_->replies.emplace_back(connection_, std::move(r));
  mailbox_->wake();
}

}  // namespace tl::control
